"""In a worker: the process (serve), the task entry points and their implementations, its caches."""

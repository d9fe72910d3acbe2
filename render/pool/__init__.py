"""In the server: the render worker pool, its zygote, fair scheduling, the workers' messages."""

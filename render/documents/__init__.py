"""In a worker: the one document a task names, read in ranges through the server's broker."""

"""In a worker: the blend and paper kernels (optional C extensions, or Pillow and numpy)."""

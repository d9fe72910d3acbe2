"""In a worker: the page as an image (PDFium or Pillow), sized and laid out on its canvas."""

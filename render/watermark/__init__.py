"""In a worker: the visible watermark (strip and diagonal pattern), its words and fonts."""

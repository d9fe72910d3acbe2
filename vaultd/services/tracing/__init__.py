"""Leak tracing: reading a leaked page's mark back to its render, rate-limited."""

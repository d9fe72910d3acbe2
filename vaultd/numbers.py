"""Parsing numbers that arrive as text (query strings, paths, headers)."""

from __future__ import annotations


def is_decimal(text: str) -> bool:
    """Plain ASCII digits only: str.isdigit() also accepts '²' or '①', which int() refuses."""
    return text.isascii() and text.isdigit()

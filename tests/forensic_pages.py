"""The page the forensic tests mark, attack and read back."""

from __future__ import annotations

import functools

from bench.leakmark_attacks import Page, corpus_pages


@functools.cache
def text_cover() -> Page:
    """The leak-tracing corpus's generated text cover, served with the visible watermark: the
    page the benchmarks measure the mark on (bench/leakmark_attacks.py). Rendered once."""
    return corpus_pages(1)[0]

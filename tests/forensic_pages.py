"""The pages the forensic tests mark, attack and read back, each made once per test process."""

from __future__ import annotations

import dataclasses
import functools

import pypdfium2 as pdfium
from PIL import Image

from bench import corpus
from bench.leakmark_attacks import SERVED_QUALITY, Page, jpeg, marked, photo_page, render_page


@functools.cache
def text_cover() -> Page:
    """The leak-tracing corpus's generated text cover, served with the visible watermark: the
    page the benchmarks measure the mark on (`bench.leakmark_attacks.corpus_pages(1)[0]`, the
    small PDF's first page). Rendered here from that PDF alone: `corpus_pages` builds its
    image-heavy PDF (about 2 s of CPU) before it renders its first page
    (`test_forensic_pages.py` holds the two equal)."""
    source = corpus.small_pdf()
    document = pdfium.PdfDocument(source.data)
    try:
        return dataclasses.replace(render_page(document, 0), name=f"{source.name}#1")
    finally:
        document.close()


@functools.cache
def served_cover() -> Image.Image:
    """The text cover unmarked, as served (JPEG q80)."""
    return jpeg(text_cover().image, SERVED_QUALITY)


@functools.cache
def marked_cover(mark_value: int, mark_layout: bytes | None = None,
                 placement_seed: bytes | None = None) -> Image.Image:
    """The text cover marked with `mark_value` (`bench.leakmark_attacks.marked`), as served.
    Callers never draw on it: every attack returns a new image."""
    return jpeg(marked(text_cover(), mark_value, mark_layout, placement_seed), SERVED_QUALITY)


@functools.cache
def photograph_page() -> Page:
    """`bench.leakmark_attacks.photo_page`: the generated photograph document's page 4."""
    return photo_page()

"""The pages the forensic tests mark, attack and read back, each made once per test process."""

from __future__ import annotations

import dataclasses
import functools
import random

import pypdfium2 as pdfium
from PIL import Image

from bench import corpus
from bench.leakmark import mark_page
from bench.leakmark_attacks import SERVED_QUALITY, Page, jpeg, marked, photo_page, render_page
from bench.leakmark_untuned import Camera, lit, photographed, saved, sensed


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


@functools.cache
def photographed_cover(camera: Camera, seed: int, render_id: int | None,
                       box: tuple[int, int, int, int] | None = None) -> Image.Image:
    """The text cover as served (marked with `render_id`; None: unmarked), photographed by
    `camera`, lit, sensed, cropped to `box` (None: the whole frame) and saved, every draw from
    `random.Random(seed)`: a leak of `bench.leakmark_untuned`, drawn by its own functions."""
    page = text_cover()
    served = jpeg(mark_page(page, render_id) if render_id is not None else page.image,
                  SERVED_QUALITY)
    rng = random.Random(seed)
    photo = sensed(lit(photographed(served, camera, rng), rng), rng)
    return saved(photo if box is None else photo.crop(box), rng)

"""Which page a leak shows (docs/leak-tracing.md, "A year of views"): the page's print, made the
same way from a page as served and from a leak of it (washed, rescaled, recompressed, drawn for
another viewer), is within SAME_PAGE bits of it and shares a band with it; other pages' prints
are further; the bits are keyed and pinned; a worker's print is parsed by fixed rules; and the
standing a view must reach rises with the candidates scored."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_attacks import Page, corpus_pages, jpeg, marked
from bench.leakmark_wash import WASHES
from render.forensic.layout import keyed
from render.forensic.placement_page import page_print
from render.forensic_wire.page_print import (
    BANDS,
    PRINT_BYTES,
    SAME_PAGE,
    BadPrint,
    bands,
    distance,
    parsed,
    projections,
)
from render.watermark import viewer_mark
from render.wire.model import WatermarkSpec
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing.candidates import NEWEST, threshold
from vaultd.services.tracing.placement import THRESHOLD

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

KEY = MarkCipher.from_key(bytes(range(40, 72))).page_print_key
OTHER_VIEWER = WatermarkSpec("Bo Otherperson", "bo.other@example.org", "198.51.100.99",
                             "Acme Corp", "2025-12-24 14:30:00 UTC")
WASH = "observed chips, no key"


@functools.cache
def _pages() -> list[Page]:
    """Six pages of the bench corpus: the generated text cover, photo pages, two manuals'
    title pages, whose prints are the nearest of the corpus to each other's."""
    return corpus_pages(6)


def _served(page: Page) -> Image.Image:
    return jpeg(marked(page, 0x123, None, b"served seed 0001"), 80)


def _leak(page: Page) -> Image.Image:
    """The page as another viewer was served it, its invisible mark washed off without the
    key, scaled to 0.6 and saved at JPEG q60, the strip cut off."""
    theirs = dataclasses.replace(page, overlay=viewer_mark.prepare(
        OTHER_VIEWER, page.image.width, page.overlay.strip_layout))
    washed = WASHES[WASH](jpeg(marked(theirs, 0x77, None, b"leaked seed 0002"), 80),
                          page.page_height, keyed(None))
    cut = washed.crop((0, 0, washed.width, page.page_height))
    size = (cut.width * 6 // 10, cut.height * 6 // 10)
    return jpeg(cut.resize(size, Image.Resampling.LANCZOS), 60)


def test_a_leak_s_print_is_its_page_s_and_no_other_s() -> None:
    pages = _pages()
    stored = [page_print(_served(page), KEY) for page in pages]
    assert all(made is not None and len(made) == PRINT_BYTES for made in stored)
    for index, page in enumerate(pages):
        shown = page_print(_leak(page), KEY)
        assert shown is not None
        own = stored[index]
        assert own is not None
        assert distance(shown, own) <= SAME_PAGE, page.name
        assert set(bands(shown)) & set(bands(own)), page.name  # the lookup finds it
        others = [distance(shown, made) for i, made in enumerate(stored)
                  if made is not None and pages[i].drawn != page.drawn]
        assert min(others) > SAME_PAGE, page.name


def test_the_print_is_keyed() -> None:
    """Without the key the bits say nothing: under another key the same page's print is as
    far from it as an unrelated page's."""
    served = _served(_pages()[0])
    ours, theirs = page_print(served, KEY), page_print(served, bytes(32))
    assert ours is not None and theirs is not None
    assert 80 <= distance(ours, theirs) <= 176
    assert page_print(served, KEY) == ours  # and the same each time


def test_a_page_without_ink_darker_than_the_pattern_has_no_print() -> None:
    """A blank page, pattern and strip alone: nothing tells it from another blank page."""
    page = _pages()[0]
    blank = dataclasses.replace(page, drawn=bytes(len(page.drawn)).replace(b"\0", b"\xff"))
    assert page_print(_served(blank), KEY) is None


def test_the_projections_are_pinned() -> None:
    """The stored prints are compared with leaks' for as long as a page may leak: the
    projections come from SHAKE-128, and this digest holds them."""
    weights = projections(bytes(range(32)))
    assert set(np.unique(weights)) == {-1.0, 1.0}
    assert hashlib.sha256(weights.astype("<i1").tobytes()).hexdigest() == (
        "da64165e84102c01fabdc8f547cb10dcbaa04edb757e51f61ecbf92b7e095dde")
    # And a print, of a page drawn in plain arrays: paper, a grey the pattern's letters could
    # be, and blocks of text-dark ink.
    values = np.full((1200, 900), 255, dtype=np.uint8)
    values[100:140, 80:820] = 20
    values[300:700:20, 80:600] = 40
    values[900:1000, 450:820] = 200
    values[1000:1100, 80:300] = 90
    made = page_print(Image.fromarray(values, "L"), bytes(range(32)))
    assert made is not None and made.hex() == (
        "a45f3c0a82cc3766cf0cbf4a7453f9211cfeb15c5f7c40df0bde8011ec19a27a")


def test_a_worker_s_print_is_parsed() -> None:
    good = bytes(range(PRINT_BYTES))
    assert parsed(good) == good and parsed(None) is None
    for bad in (good[:-1], good + b"\0", "not bytes", [1, 2, 3]):
        with pytest.raises(BadPrint, match=f"^a page print is {PRINT_BYTES} bytes$"):
            parsed(bad)
    assert len(bands(good)) == BANDS and bands(good)[1] == "1:0203"


def test_the_standing_a_view_must_reach_rises_with_the_candidates() -> None:
    assert threshold(1, THRESHOLD) == threshold(NEWEST, THRESHOLD) == THRESHOLD
    tail = 0.5 * math.erfc(THRESHOLD / math.sqrt(2)) * NEWEST
    for count in (10_000, 50_000, 1_000_000):
        level = threshold(count, THRESHOLD)
        assert level > THRESHOLD
        # A wrong view passes it as often among `count` as THRESHOLD among NEWEST.
        assert count * 0.5 * math.erfc(level / math.sqrt(2)) == pytest.approx(tail, rel=1e-6)
    assert threshold(50_000, THRESHOLD) == pytest.approx(5.89, abs=0.01)

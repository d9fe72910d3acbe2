"""The measurement behind "A mark the washes above leave" in docs/leak-tracing.md
(`bench.leakmark_jitter`): the pattern's words pasted up to a pixel off their places under a
key, measured back from a served page knowing the viewer's text, and correlated with the
offsets each render would have drawn. A washer with the code moves the words back, and pays
for it. The mark built on it, read blind, is tested in test_forensic_placement."""

from __future__ import annotations

import functools
import random

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from bench.leakmark_attacks import MARK, SERVED_QUALITY, Page, jpeg, psnr
from bench.leakmark_jitter import (
    Word,
    copy_corners,
    jitter,
    jittered_page,
    measured,
    moved_back,
    tile_words,
    z_score,
)
from tests.forensic_pages import text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

KEY = bytes(range(3, 35))
RENDER = 0x0ABC_DEF0_1234
READABLE_DB = 35.0
FOUND_Z = 6.0  # the largest of 16,000 wrong renders' measured 4.2 (docs/leak-tracing.md)


@functools.cache
def _page() -> tuple[Page, list[Word], npt.NDArray[np.int64]]:
    page = text_cover()
    words = tile_words(MARK, page.image.width)
    copies = len(copy_corners(page))
    return page, words, jitter(KEY, RENDER, copies, len(words))


@functools.cache
def _served() -> Image.Image:
    page, words, offsets = _page()
    return jpeg(jittered_page(page, words, offsets), SERVED_QUALITY)


def _z(leak: Image.Image, renders: list[int]) -> list[float]:
    """Each render's z-score for the words' offsets measured once on `leak`."""
    page, words, offsets = _page()
    found, valid = measured(leak, page, words)
    copies = len(offsets) // len(words)
    return [z_score(found, valid, jitter(KEY, render, copies, len(words)), len(words))
            for render in renders]


def test_the_served_page_names_its_render_and_no_other() -> None:
    rng = random.Random(5)
    true, *others = _z(_served(), [RENDER, *(rng.getrandbits(61) for _ in range(200))])
    assert true >= FOUND_Z
    assert max(others) < FOUND_Z


def test_moving_the_words_half_way_back_keeps_the_page_readable_and_the_mark() -> None:
    page, words, _ = _page()
    washed = moved_back(_served(), page, words, 0.5)
    assert psnr(_served(), washed) >= READABLE_DB
    assert _z(washed, [RENDER])[0] >= FOUND_Z


def test_moving_them_all_the_way_back_removes_it_and_the_page_pays() -> None:
    """The control: the measurement can fail; and what removing the jitter costs (about what
    drawing it cost) is under the readable 35 dB."""
    page, words, _ = _page()
    washed = moved_back(_served(), page, words, 1.0)
    assert psnr(_served(), washed) < READABLE_DB
    assert _z(washed, [RENDER])[0] < FOUND_Z / 2

"""Phone photos of a page shown on a screen (issue 30): the page's quadrilateral is found to
within a few pixels, the photo reading names the right id, and unmarked photos made the same
way name none. Real pixels throughout: the served page, the simulated screen and camera of
`bench.leakmark_phone` (perspective, pixel grid, blur, tone, noise, JPEG)."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_attacks import SERVED_QUALITY, jpeg, marked
from bench.leakmark_phone import photographed
from render.forensic import decode, rectify
from tests.forensic_pages import text_cover

RENDER_ID = 0x15A2B3C4D5E
SEEDS = (1, 2, 3)  # seed 2: the paper at 253-254 in luminance, read in its blue channel


@functools.cache
def _photo(seed: int, mark: bool) -> tuple[Image.Image, list[tuple[float, float]]]:
    page = text_cover()
    served = jpeg(marked(page, RENDER_ID) if mark else page.image, SERVED_QUALITY)
    return photographed(served, random.Random(seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_page_quadrilateral_is_found(seed: int) -> None:
    photo, truth = _photo(seed, True)
    found = rectify.page_corners(photo.convert("L"))
    assert found is not None
    assert np.abs(np.array(found) - np.array(truth)).max() < 5.0  # px, in a 12 MP frame
    assert rectify.needs_rectifying(found) == rectify.needs_rectifying(truth)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_phone_photo_names_its_view(seed: int) -> None:
    assert decode(_photo(seed, True)[0]) == RENDER_ID


@pytest.mark.parametrize("seed", SEEDS)
def test_an_unmarked_phone_photo_names_none(seed: int) -> None:
    assert decode(_photo(seed, False)[0]) is None


def test_no_quadrilateral_in_a_served_page_or_a_flat_image() -> None:
    assert rectify.page_corners(text_cover().image.convert("L")) is None
    assert rectify.page_corners(Image.new("L", (1200, 1600), 240)) is None

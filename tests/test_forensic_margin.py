"""A page photographed on a desk from far enough that it covers under a quarter of the frame
(the `margin` family of `bench.leakmark_untuned`, docs/leak-tracing.md, "Families the reader was
not tuned on"): its corners are found at the smaller area (`rectify.SMALL_PAGE_AREA`) and the
photo reading names its view; the same photo of the page served unmarked names none; a glare
spot on the desk joined to the page's bright region is no edge of it."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from PIL import Image

from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from bench.leakmark_untuned import Camera, lit, photographed, saved, sensed
from render.forensic import decode, photo, rectify
from tests.forensic_pages import text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop
RENDER_ID = 0x0C4E5A1B2D3
# The camera of the seed-41 `margin` leak of `manual.pdf#1` (1,140 x 1,521) that the reader
# missed: the page on 24 % of the frame. Its light, sensor and saves drawn from SEED (the
# generator's own functions): a 1,151 x 1,535 JPEG.
CAMERA = Camera(frame=(1934, 2579), focal=3161.142325241923, yaw=-0.014540200820536881,
                pitch=0.15679799645783235, roll=-0.15785596343022196, aim=(618.5, 855.5),
                distance=4166.715773690894)
SEED = 3
GLARE_SEED = 2  # a glare spot on the desk below the page joins its bright region


@functools.cache
def _leak(mark: bool, seed: int = SEED) -> Image.Image:
    page = text_cover()
    served = jpeg(mark_page(page, RENDER_ID) if mark else page.image, SERVED_QUALITY)
    rng = random.Random(seed)
    return saved(sensed(lit(photographed(served, CAMERA, rng), rng), rng), rng)


def _true_corners(leak: Image.Image) -> np.ndarray:
    width, height = text_cover().image.size
    page = np.array([[0, 0], [width, 0], [width, height], [0, height]], float)
    return CAMERA.project(page) * (leak.width / CAMERA.frame[0])


def test_a_page_on_under_a_quarter_of_the_frame_has_its_corners_found() -> None:
    grey = _leak(True).convert("L")
    assert rectify.page_corners(grey) is None  # under the quarter a page shown large covers
    found = rectify.page_corners(grey, rectify.SMALL_PAGE_AREA)
    assert found is not None
    assert np.abs(np.array(found) - _true_corners(_leak(True))).max() < 3.0  # px
    assert rectify.needs_rectifying(found)
    assert photo.edges_seen(grey, found, each_side=True)


def test_a_glare_spot_joined_to_the_page_is_no_edge_of_it() -> None:
    # The quadrilateral takes in the glare: two of its sides run over the desk, darker than
    # the paper (seen against the page's paper level) but with the desk on both sides.
    leak = _leak(True, GLARE_SEED)
    grey = leak.convert("L")
    found = rectify.page_corners(grey, rectify.SMALL_PAGE_AREA)
    assert found is not None
    assert np.abs(np.array(found) - _true_corners(leak)).max() > 100  # px: not the page's
    assert photo.edges_seen(grey, found)
    assert not photo.edges_seen(grey, found, each_side=True)


@pytest.mark.parametrize(("mark", "expected"), [(True, RENDER_ID), (False, None)],
                         ids=["marked", "unmarked"])
def test_a_small_page_on_a_desk_is_named_and_its_unmarked_twin_is_not(
        mark: bool, expected: int | None) -> None:
    assert decode(_leak(mark), LAYOUT) == expected


def test_a_small_bright_region_is_no_page_without_edges_seen() -> None:
    # Paper filling the frame with a bright patch on it: no darker surround, so no corners at
    # the smaller area either.
    values = np.full((800, 600), 200, np.uint8)
    values[300:500, 200:400] = 250
    assert rectify.page_corners(Image.fromarray(values), rectify.SMALL_PAGE_AREA) is None

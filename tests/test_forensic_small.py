"""Leaks shown smaller than 0.3 of the served size (docs/leak-tracing.md, "Small leaks"): the
search reads scales down to `sync.SMALL_SCALE` where the image is read at full size, after
the candidates it reads at 0.3 and over."""

from __future__ import annotations

import pytest
from PIL import Image

from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from render.forensic import decode, sync
from tests.forensic_pages import text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

RENDER_ID = 0x2F3A_5C7E_91B  # any 45-bit id


def _shrunk(image: Image.Image, factor: float) -> Image.Image:
    """`image` scaled by `factor` (bicubic), then saved at JPEG q75."""
    small = image.resize((round(image.width * factor), round(image.height * factor)),
                         Image.Resampling.BICUBIC)
    return jpeg(small, 75)


def test_a_served_page_scaled_to_a_quarter_is_named_and_its_unmarked_twin_is_not() -> None:
    page = text_cover()
    marked = _shrunk(jpeg(mark_page(page, RENDER_ID), SERVED_QUALITY), 0.25)
    unmarked = _shrunk(jpeg(page.image, SERVED_QUALITY), 0.25)
    assert marked.width < 0.3 * page.image.width  # under the scales searched before
    assert decode(marked, LAYOUT) == RENDER_ID
    assert decode(unmarked, LAYOUT) is None


def test_small_scales_come_after_the_others_and_never_displace_one() -> None:
    grey = _shrunk(jpeg(mark_page(text_cover(), RENDER_ID), SERVED_QUALITY), 0.25).convert("L")
    usual = sync.tile_vectors(grey, 4)
    with_small = sync.tile_vectors(grey, 4, small=2)
    assert with_small[: len(usual)] == usual
    added = with_small[len(usual):]
    assert added, "no candidate under the scale of 0.3"
    for dx, dy in added:
        length = (dx * dx + dy * dy) ** 0.5
        assert sync.SMALL_SCALE * 192 <= length < sync.MIN_SCALE * 192 + 4
    # The true scale, 0.25, is among the added ones (the usual range cannot hold it).
    assert any(abs((dx * dx + dy * dy) ** 0.5 / 192 - 0.25) < 0.005 for dx, dy in added)


def test_a_large_image_gets_no_small_candidates() -> None:
    # Halved for its autocorrelation, a page that small would keep chips under a pixel.
    grey = jpeg(mark_page(text_cover(), RENDER_ID), SERVED_QUALITY).convert("L").resize(
        (1500, 2075))
    assert max(grey.size) > 2048
    assert sync.tile_vectors(grey, 4, small=2) == sync.tile_vectors(grey, 4)

"""The smallest scale a leak's mark can have (`render.forensic.served`): bounded only when the
image shows the served page's strip along its bottom and paper up its sides, and then by the
deployment's `render.long_side`; a page shown small on any surround keeps every scale."""

from __future__ import annotations

import functools
import importlib
import io
import math
import random

import pypdfium2 as pdfium
import pytest
from PIL import Image

from bench import corpus
from bench.leakmark_attacks import ATTACKS, SERVED_QUALITY, Page, jpeg, marked, render_page
from render.forensic import decode, ink, served, sync
from render.forensic.layout import TILE
from render.forensic.trace_task import trace_image
from render.wire.model import PixelBudget

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

decode_module = importlib.import_module("render.forensic.decode")
RENDER_ID = 0x0D15EA5E0F1
WIDE_SIDE = 2200  # a deployment's render.long_side that serves portrait pages 1701 px wide


@functools.cache
def _page(long_side: int = served.LONG_SIDE) -> Page:
    document = pdfium.PdfDocument(corpus.small_pdf().data)
    try:
        return render_page(document, 0, PixelBudget(long_side=long_side))
    finally:
        document.close()


@functools.cache
def _served(long_side: int = served.LONG_SIDE, render_id: int | None = RENDER_ID,
            ) -> Image.Image:
    """The page as served (never drawn on: every attack returns a new image)."""
    page = _page(long_side)
    return jpeg(page.image if render_id is None else marked(page, render_id), SERVED_QUALITY)


def _least(image: Image.Image, long_side: int = served.LONG_SIDE) -> float | None:
    grey = image.convert("L")
    return served.least_scale(grey, ink.paper_level(grey), long_side)


def _on_surround(image: Image.Image, zoom: float, grey: int) -> Image.Image:
    """`image` at `zoom` on a plain surround of `grey`, 300 px of it each side."""
    shown = image.resize((round(image.width * zoom), round(image.height * zoom)),
                         Image.Resampling.BILINEAR)
    surround = Image.new("RGB", (shown.width + 600, shown.height + 600), (grey,) * 3)
    surround.paste(shown, (300, 300))
    return surround


def test_a_served_page_is_bounded_by_its_width_over_the_long_side() -> None:
    """Served, rescaled, recompressed or raised in contrast, the page's strip spans its bottom
    and its paper its sides: the mark is at least its width / 1600 (less a 2 % margin). A
    screenshot's page part, a few pixels of desktop at its edges, is bounded by its page."""
    page = _served()
    assert _least(page) == pytest.approx(0.98 * page.width / served.LONG_SIDE)
    rng = random.Random(1)
    for attack in ("jpeg q50", "downscale 50%", "contrast +20%", "brightness -20%"):
        leak = ATTACKS[attack](page, 0, rng)
        assert _least(leak) == pytest.approx(0.98 * leak.width / served.LONG_SIDE), attack
    assert _least(page, WIDE_SIDE) == pytest.approx(0.98 * page.width / WIDE_SIDE)
    framed = _on_surround(page, 1.0, 120).crop((295, 294, 300 + page.width + 6,
                                                 300 + page.height + 5))
    assert _least(framed) == pytest.approx(0.98 * page.width / served.LONG_SIDE)


@pytest.mark.parametrize("grey", [255, 246, 200, 120, 40])
def test_a_page_on_a_surround_has_no_bound(grey: int) -> None:
    """A white surround is paper on both sides but has no strip along its bottom; one of the
    strip's own grey has a band but no paper up its sides; darker ones have neither."""
    assert _least(_on_surround(_served(), 0.6, grey)) is None


def test_a_cropped_or_brightened_page_has_no_bound() -> None:
    """Cut above the strip, or the strip clipped to white with the paper, nothing shows
    the image is the page: no bound (the readings try every scale, as before)."""
    rng = random.Random(2)
    for attack in ("half-area crop", "brightness +20%", "rotate 2 deg"):
        assert _least(ATTACKS[attack](_served(), _page().page_height, rng)) is None, attack


@pytest.mark.parametrize("grey", [255, 236, 150])
@pytest.mark.parametrize("tone", ["none", "brightness +20%"])
def test_a_page_shown_small_on_a_surround_still_reads(grey: int, tone: str) -> None:
    """The attack a size bound invites: the page shown at 0.6 inside an image of 1.7 times
    its size (white, light-grey or mid-grey surround; the light ones give no page outline).
    A bound from the image's size would skip the page's scale; this one is not made."""
    leak = ATTACKS[tone](_on_surround(_served(), 0.6, grey), 0, random.Random(3))
    assert decode(leak) == RENDER_ID


def test_an_unmarked_page_screens_no_candidate_under_its_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On an unmarked page as served, most of the search's candidates are the text's and the
    JPEG grid's periods, at a third or two thirds of the tile: under the strip's bound, they
    are not screened (0.1 s of an unmarked page); the scan starts at the bound too."""
    page = _served(render_id=None)
    least = _least(page)
    assert least is not None
    candidates = sync.tile_vectors(page.convert("L"), decode_module._CANDIDATES)
    assert any(math.hypot(*vector) < least * TILE for vector in candidates), candidates
    screened: list[float] = []
    scanned: list[float] = []
    real_read, real_scales = decode_module._read, decode_module.scan.best_scales

    def reading(grey: Image.Image, vector: tuple[float, float], *rest: object) -> object:
        screened.append(math.hypot(*vector) / TILE)
        return real_read(grey, vector, *rest)  # type: ignore[arg-type]

    def scales(points: object, angle: float, plan: object, floor: float) -> object:
        scanned.append(floor)
        return real_scales(points, angle, plan, floor)  # type: ignore[arg-type]

    monkeypatch.setattr(decode_module, "_read", reading)
    monkeypatch.setattr(decode_module.scan, "best_scales", scales)
    assert decode(page) is None
    assert all(scale >= least for scale in screened), (screened, least)
    assert scanned and all(floor == least for floor in scanned), (scanned, least)
    # Marked, the page still reads at its own scale, above the bound.
    assert decode(_served()) == RENDER_ID


def test_the_bound_follows_the_deployments_long_side() -> None:
    """Pages served 2200 px long are 1701 px wide: taken for a 1600 px deployment's, the strip
    would say the page is shown at 1.04 or more and the page as served (1.0) would not be
    tried. Told the deployment's long side, the trace reads it; the worker's task is told it
    by the service (`render.long_side`)."""
    page = _served(WIDE_SIDE)
    assert page.width > served.LONG_SIDE
    assert decode(page) is None
    assert decode(page, long_side=WIDE_SIDE) == RENDER_ID
    buffer = io.BytesIO()
    page.save(buffer, "JPEG", quality=SERVED_QUALITY)
    data = buffer.getvalue()
    assert trace_image(data, None, WIDE_SIDE) == RENDER_ID
    assert trace_image(data, None) is None

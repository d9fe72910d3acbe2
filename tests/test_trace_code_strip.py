"""The trace code's place in the footer strip (render.watermark.viewer_mark): after the first line
when it fits there, on a row of its own when not; drawn per page over a strip cached per viewer."""

from __future__ import annotations

import numpy as np
from PIL import Image

from render.page import canvas
from render.watermark import viewer_mark
from render.wire.model import PixelBudget, WatermarkSpec


def _spec(brand: str, render_id: int | None) -> WatermarkSpec:
    return WatermarkSpec("Ann", "ann@example.com", "203.0.113.7", brand,
                         "2026-11-24 04:30:00 UTC", render_id)


def test_code_follows_a_short_first_line_and_keeps_the_strip_height() -> None:
    plain = viewer_mark.layout_strip(_spec("Acme", None), 1237)
    coded = viewer_mark.layout_strip(_spec("Acme", 12345), 1237)
    assert plain.code_at is None
    assert coded.code_at is not None and coded.code_at[1] == 0
    assert coded.lines[0] == "Confidential — Acme ·"
    assert coded.height == plain.height


def test_code_gets_its_own_row_after_a_long_first_line() -> None:
    brand = "Very Long Holding Company Name International Limited Partnership Group"
    coded = viewer_mark.layout_strip(_spec(brand, 12345), 800)
    plain = viewer_mark.layout_strip(_spec(brand, None), 800)
    assert coded.code_at is not None
    row = coded.code_at[1]
    assert coded.lines[row] == "" and coded.height == plain.height + coded.line_height


def test_pages_of_one_viewer_share_the_drawn_strip_but_not_the_code() -> None:
    viewer_mark.drawn_overlay.cache_clear()
    plan = canvas.layout((1237, 1600), _spec("Acme", 1), PixelBudget())
    first = viewer_mark.prepare(_spec("Acme", 0x111111111), plan.width, plan.strip)
    second = viewer_mark.prepare(_spec("Acme", 0x222222222), plan.width, plan.strip)
    assert first.strip is second.strip  # one cached drawing
    assert (first.render_id, second.render_id) == (0x111111111, 0x222222222)
    strips = []
    for overlay in (first, second):
        image = Image.new("RGBX", plan.size, (255, 255, 255, 255))
        buffer = bytearray(image.tobytes())
        page = canvas.Canvas(Image.frombuffer("RGBX", plan.size, buffer, "raw", "RGBX", 0, 1),
                             buffer, plan.width * 4)
        page.image.readonly = False
        viewer_mark.apply(page, overlay, plan.page[1])
        strips.append(np.asarray(page.image.convert("L"))[plan.page[1]:])
    assert not np.array_equal(strips[0], strips[1])  # each page prints its own code

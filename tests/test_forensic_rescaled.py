"""A served page scaled to 60 % and saved at JPEG q60 (docs/leak-tracing.md, "Scaled and
recompressed leaks"): the tile vector's refinement through its harmonics must not be thrown
off by a slope where a harmonic should peak."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image

from bench import corpus
from bench.leakmark_attacks import MARK, SERVED_QUALITY, _watermarked, jpeg
from render.forensic import decode, sync
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import PixelBudget
from vaultd.services.pages.mark_key import MarkCipher

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def _served(seed: int) -> tuple[Image.Image, int, bytes]:
    """The text cover's first page as vaultd serves it (the trace code printed, the words
    placed by the placement mark, the sealed value in a deployment's layout drawn from
    `seed`), the value its pixels carry and the layout key."""
    rng = random.Random(seed)
    cipher = MarkCipher.from_key(rng.randbytes(32))
    render_id = trace_codes.new_render_id(rng.getrandbits)
    spec = dataclasses.replace(MARK, render_id=render_id, mark_value=cipher.seal(render_id),
                               mark_layout=cipher.layout_key,
                               placement_seed=cipher.placement_seed(render_id))
    document = pdfium.PdfDocument(corpus.small_pdf().data)
    try:
        page = document[0]
        width, height = page.get_size()
        budget = PixelBudget()
        plan = canvas.layout(scaled_size(width, height, fit_scale(width, height, budget)),
                             spec, budget)
        drawn = canvas.render_pdf(page, plan)
        overlay = viewer_mark.prepare(spec, plan.width, plan.strip)
        pixels = bytes(drawn.pixels[: drawn.stride * drawn.image.height])
        page.close()
    finally:
        document.close()
    image = _watermarked(pixels, drawn.image.size, overlay, plan.page[1])
    assert spec.mark_value is not None
    return jpeg(image, SERVED_QUALITY), spec.mark_value, cipher.layout_key


def test_a_page_scaled_to_60_percent_at_jpeg_q60_is_read() -> None:
    # Seed 6 drew the leak whose third harmonic sat on a slope: its refined tile vector came
    # out at -3,059 px instead of 115.2, and the leak was missed.
    served, value, layout_key = _served(6)
    small = served.resize((round(served.width * 0.6), round(served.height * 0.6)),
                          Image.Resampling.BICUBIC)
    assert decode(jpeg(small, 60), keyed(layout_key)) == value


def test_a_harmonic_on_a_slope_is_not_fitted() -> None:
    # An autocorrelation with the tile's peak at 100 px and its 2nd harmonic at 200 px; where
    # the 3rd should be, a ramp rising out of the search window, nearly straight: a parabola
    # through it has its vertex far away.
    acf = np.zeros((64, 1024), dtype=np.float32)
    for k, height in ((1, 1.0), (2, 0.8)):
        acf[0, 100 * k - 1: 100 * k + 2] = (0.5 * height, height, 0.5 * height)
    acf[0, 290:310] = 0.6 - 0.01 * (np.arange(290, 310) - 290)
    acf[0, 297] -= 0.0002  # bent a little: the parabola opens downward, its vertex far off
    x, y = sync._refine(acf, (100.0, 0.0))
    assert abs(x - 100.0) < 0.6 and abs(y) < 0.6
    px, _, _ = sync.peak(acf, (300.0, 0.0), 2)
    assert abs(px - 298.0) <= 0.5  # the window's highest point, at most half a pixel off

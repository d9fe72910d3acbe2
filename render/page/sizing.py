"""Output sizes, computed before anything is rasterised.

A page's declared size is attacker-controlled (a PDF page may claim 200 inches, or one point), so
the scale is derived from the budget and the declared size, and the bitmap that the scale implies
is checked against the budget before PDFium or Pillow allocates it.
"""

from __future__ import annotations

import math

from render.wire.model import PixelBudget, Unreadable

# The bottom strip needs room for a line of text; narrower pages are centred on a wider canvas.
MIN_CANVAS_WIDTH = 800


def fit_scale(width: float, height: float, budget: PixelBudget) -> float:
    """The factor that brings a `width` x `height` page (any unit) to the budget, up or down."""
    if not (_usable(width) and _usable(height)):
        raise Unreadable("the page has no usable size")
    by_side = budget.long_side / max(width, height)
    by_area = math.sqrt(budget.max_pixels / (width * height))
    scale = min(by_side, by_area)
    # ceil() in the renderers can add a pixel per side; shave until the rounded size fits.
    while _area(width, height, scale) > budget.max_pixels and scale > 0:
        scale *= 0.999
    return scale


def scaled_size(width: float, height: float, scale: float) -> tuple[int, int]:
    """Pixel size of a page rendered at `scale` (PDFium rounds up; so do we)."""
    return max(1, math.ceil(width * scale)), max(1, math.ceil(height * scale))


def canvas_width(page_width: int, budget: PixelBudget) -> int:
    """Width of the final image: the page, widened for the strip when the page is very narrow."""
    return max(page_width, min(MIN_CANVAS_WIDTH, budget.long_side))


def _usable(value: float) -> bool:
    # Bounds far outside any real page, so the arithmetic above can neither underflow nor overflow.
    return math.isfinite(value) and 1e-4 <= value <= 1e9


def _area(width: float, height: float, scale: float) -> int:
    w, h = scaled_size(width, height, scale)
    return w * h

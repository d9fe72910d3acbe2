"""The search's folds of a candidate tile vector (`render.forensic.decode`, steps 2-3): the
image's weighted residual (`sync.residual_levels`) resampled into the mark's frame and summed
over every tile, in full or screened at chip resolution, each reading of the image kept for the
search's later candidates; and a small tile's candidate brought to its scale by the screen."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import coarse, sync
from render.forensic.layout import CHIP, TILE, Layout

Floats = npt.NDArray[np.float32]
# Upright pixels folded at most (about 160 tiles): a small scale candidate on a large image
# would otherwise resample it to (1/0.3)^2 = 11 times its area (seconds, and gigabytes).
_MAX_FOLD_PIXELS = 6_000_000
# A tile vector under this scale is first rescaled within 2.4 % by the screen (`finer`): a
# screen-grab at 0.41 saved at WebP q66 had its candidate 0.9 % long (screen 4.4, under the
# 4.5 the decoder needs; 7.0 at its true scale, named).
_FINER_BELOW = 0.5
_FINER_STEPS = tuple(1.0 + 0.004 * k for k in range(-6, 7))
_FINER_TILES = 8  # ...in an image whose short side is under this many tiles


Levels = Callable[[Image.Image, float, int], Image.Image]


def finer(grey: Image.Image, vector: tuple[float, float], detail: Levels, plan: Layout,
          ) -> tuple[float, float]:
    """A small tile's `vector` rescaled by whichever of _FINER_STEPS screens best (`screen`):
    the autocorrelation's peak is good to about a pixel, 1-2 % of a tile under 100 px, and a
    fold across an image under _FINER_TILES tiles needs its scale to 0.3 %. Larger tiles, and
    images of more tiles (their autocorrelation's peaks are sharper and the search's nudges
    reach them; 13 screens of a large image would cost seconds), as they are."""
    length = math.hypot(*vector)
    if length >= _FINER_BELOW * TILE or min(grey.size) >= _FINER_TILES * length:
        return vector
    # Every step at the vector's own blur radius: the image's reading is made once.
    own = radius(length / TILE)
    screened = [(screen(grey, (vector[0] * step, vector[1] * step), detail, plan, own),
                 step) for step in _FINER_STEPS]
    step = max(screened)[1]
    return vector[0] * step, vector[1] * step


def kept() -> Levels:
    """The residual of an image (its central part, at a blur radius) as 8-bit levels
    (`sync.residual_levels`) reduced by a whole factor, each kept for the search's later
    candidates: the screen, then the fold, then candidates of the same size and radius."""
    readings: dict[tuple[int, int, float, int], Image.Image] = {}

    def levels(grey: Image.Image, radius: float, reduced: int) -> Image.Image:
        # One search reads one image: its central part of a given size is one crop.
        key = (grey.width, grey.height, radius, reduced)
        if key not in readings:
            if reduced > 1:
                readings[key] = levels(grey, radius, 1).reduce(reduced)
            else:
                readings[key] = sync.residual_levels(grey, radius)
        return readings[key]

    return levels


def fold(grey: Image.Image, vector: tuple[float, float], levels: Levels) -> Floats:
    """The residual in the mark's frame (scale 1, upright), summed over every tile."""
    scale = math.hypot(*vector) / TILE
    grey = within_fold_budget(grey, scale)
    a, d = vector[0] / TILE, vector[1] / TILE
    width, height = grey.size
    size = (math.ceil(width / scale) + TILE, math.ceil(height / scale) + TILE)
    upright = levels(grey, radius(scale), 1).transform(
        size, Image.Transform.AFFINE, (a, -d, 0.0, d, a, 0.0), Image.Resampling.BILINEAR,
        fillcolor=128)
    plane = np.asarray(upright, dtype=np.float32) - 128.0
    rows, cols = plane.shape[0] // TILE, plane.shape[1] // TILE
    tiles = plane[: rows * TILE, : cols * TILE].reshape(rows, TILE, cols, TILE)
    folded: Floats = tiles.sum(axis=(0, 2), dtype=np.float32)
    return folded


def screen(grey: Image.Image, vector: tuple[float, float], levels: Levels,
           plan: Layout, blur: float | None = None) -> float:
    """The sync score of a fold at chip resolution (`coarse`: cells of 2 px, a quarter of the
    resampling), which tells a candidate worth the full fold from one with no mark; the
    residual's `blur` radius the scale's (`radius`) unless given."""
    scale = math.hypot(*vector) / TILE
    grey = within_fold_budget(grey, scale)
    # Box-averaged by 2 first when the image is denser than the cells (each cell then reads
    # every pixel, as the full fold does).
    reduced = 2 if scale >= 2 / coarse.CELL else 1
    step = coarse.CELL / reduced
    a, d = vector[0] / TILE * step, vector[1] / TILE * step
    size = (math.ceil(grey.width / scale / coarse.CELL) + coarse.GRID,
            math.ceil(grey.height / scale / coarse.CELL) + coarse.GRID)
    upright = levels(grey, blur or radius(scale), reduced).transform(
        size, Image.Transform.AFFINE, (a, -d, 0.0, d, a, 0.0), Image.Resampling.BILINEAR,
        fillcolor=128)
    plane = np.asarray(upright, dtype=np.float64) - 128.0
    rows, cols = plane.shape[0] // coarse.GRID, plane.shape[1] // coarse.GRID
    tiles = plane[: rows * coarse.GRID, : cols * coarse.GRID].reshape(
        rows, coarse.GRID, cols, coarse.GRID)
    return float(coarse.folded_scores(-tiles.sum(axis=(0, 2))[None], plan)[0])


def radius(scale: float) -> float:
    """The residual's blur radius for a mark at `scale`: half a chip, a pixel at least."""
    return max(1.0, CHIP * scale / 2)


def within_fold_budget(grey: Image.Image, scale: float) -> Image.Image:
    """`grey`, or its central part whose upright copy at `scale` fits _MAX_FOLD_PIXELS: a
    mark's tiles repeat everywhere, so a part of a large image holds enough of them."""
    return central_part(grey, _MAX_FOLD_PIXELS * scale * scale / (grey.width * grey.height))


def central_part(grey: Image.Image, share: float) -> Image.Image:
    """`grey`, or its central part of `share` of its area when that is under 1."""
    if share >= 1.0:
        return grey
    side = math.sqrt(share)
    width, height = max(1, round(grey.width * side)), max(1, round(grey.height * side))
    left, top = (grey.width - width) // 2, (grey.height - height) // 2
    return grey.crop((left, top, left + width, top + height))



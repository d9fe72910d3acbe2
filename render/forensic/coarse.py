"""Coarse trials of a fold, many at once: the sync score of the points folded at each of a
list of (horizontal, vertical) scales, at chip resolution.

A scan (`render.forensic.scan`, `render.forensic.photo`) tries hundreds of scales to find the
few worth a fine fold; each trial only has to rank its scale. So the tile is folded into cells
of CELL x CELL px (96 x 96, not 192 x 192: a quarter of the FFT work, the offset found to
CELL px), each cell holding the sum of its points' values (the matched filter: a cell with
more points says more), a batch of trials at a time (one bincount, one batched FFT), and each
chip is the mean of its cells. Scores are on the same scale as `chips.sync_score`: standard
deviations under chance, the best offset of 9,216 (unmarked images: about 3.5-4.3).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.fft  # loaded now: numpy loads it lazily, and a confined worker may not read it later
import numpy.typing as npt

from render.forensic.layout import TILE, TILE_CHIPS, Layout
from render.forensic.pattern_model import Points

Floats = npt.NDArray[np.float64]
CELL = 2  # px of the mark's frame a side per cell
GRID = TILE // CELL
_PER_CHIP = GRID // TILE_CHIPS
_BATCH = 32  # trials folded together: about 8 bytes x 6 x points x _BATCH of temporaries


@functools.lru_cache(maxsize=8)
def _template_spectrum(plan: Layout) -> npt.NDArray[np.complex128]:
    """The conjugate spectrum of the sync template at cell resolution."""
    signs = np.zeros(TILE_CHIPS * TILE_CHIPS)
    signs[plan.sync_chips] = 2.0 * plan.key_bits[plan.sync_chips] - 1.0
    template = np.kron(signs.reshape(TILE_CHIPS, TILE_CHIPS), np.ones((_PER_CHIP, _PER_CHIP)))
    spectrum: npt.NDArray[np.complex128] = np.conj(np.fft.rfft2(template))
    return spectrum


def scores(points: Points, scales: npt.NDArray[np.float64], angle: float, plan: Layout,
           ) -> Floats:
    """The coarse sync score of `points` folded at each row (horizontal, vertical scale) of
    `scales`, the mark's x axis at `angle` (radians) in the image."""
    ys, xs, values = points
    cos, sin = math.cos(angle), math.sin(angle)
    along, across = cos * xs + sin * ys, cos * ys - sin * xs
    # Made non-negative (a shift of every point is an offset of the tile, which is searched):
    # truncation is then the floor.
    along, across = along - along.min(), across - across.min()
    # Upright points on the pixel grid (the usual case): each column's cell at a scale is one
    # table entry, looked up, not computed point by point (twice as fast).
    on_grid = angle == 0.0 and bool(np.all(along == np.round(along))) and bool(
        np.all(across == np.round(across)))
    columns, rows = along.astype(np.intp), across.astype(np.intp)
    cells = GRID * GRID
    result = np.empty(len(scales))
    weights = np.tile(values, min(_BATCH, len(scales)))
    for start in range(0, len(scales), _BATCH):
        batch = scales[start: start + _BATCH]
        count = len(batch)
        first = (np.arange(count) * cells)[:, None]
        if on_grid:
            column_cell = _cells(int(columns.max()) + 1, batch[:, 0])
            row_cell = _cells(int(rows.max()) + 1, batch[:, 1]) * GRID + first.astype(np.int32)
            index = (row_cell[:, rows] + column_cell[:, columns]).ravel()
        else:
            ix = (along[None, :] / (CELL * batch[:, :1])).astype(np.intp) % GRID
            iy = (across[None, :] / (CELL * batch[:, 1:])).astype(np.intp) % GRID
            index = (iy * GRID + ix + first).ravel()
        sums = np.bincount(index, weights[: index.size], count * cells).astype(np.float64)
        darkness = -sums.reshape(count, GRID, GRID)
        result[start: start + count] = folded_scores(darkness, plan)
    return result


def _cells(length: int, scales: Floats) -> npt.NDArray[np.int32]:
    """Per scale (rows) and pixel position 0..length-1 (columns): the cell it folds into
    (32-bit: the lookups of every point at every scale are the bulk of the work)."""
    positions = np.arange(length)[None, :] / (CELL * scales[:, None])
    table: npt.NDArray[np.int32] = (positions.astype(np.int64) % GRID).astype(np.int32)
    return table


def folded_scores(darkness: npt.NDArray[np.float64], plan: Layout) -> Floats:
    """The sync scores of tiles folded at cell resolution (count, GRID, GRID), darker
    positive: each aligned on the template at its correlation's peak, then read as chips."""
    count = len(darkness)
    corr = np.fft.irfft2(np.fft.rfft2(darkness) * _template_spectrum(plan), s=(GRID, GRID))
    peak = corr.reshape(count, -1).argmax(axis=1)
    dy, dx = peak // GRID, peak % GRID
    # Each chip's sum at every position (a cyclic box of _PER_CHIP cells a side), then the
    # chips of the aligned tile picked out: the peak's offset, every _PER_CHIP cells.
    box = darkness.copy()
    for shift in range(1, _PER_CHIP):
        box += np.roll(darkness, -shift, axis=1)
    rows = box.copy()
    for shift in range(1, _PER_CHIP):
        box += np.roll(rows, -shift, axis=2)
    steps = np.arange(0, GRID, _PER_CHIP)
    from_y = (dy[:, None] + steps[None, :]) % GRID
    from_x = (dx[:, None] + steps[None, :]) % GRID
    chip = box[np.arange(count)[:, None, None], from_y[:, :, None], from_x[:, None, :]].reshape(
        count, -1)
    chip -= chip.mean(axis=1, keepdims=True)
    chip /= np.maximum(chip.std(axis=1, keepdims=True), 1e-9)
    sync, signs = plan.sync_chips, 2.0 * plan.key_bits[plan.sync_chips] - 1.0
    result: Floats = chip[:, sync] @ signs / math.sqrt(len(sync))
    return result

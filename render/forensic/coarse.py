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
import numpy.typing as npt

from render.forensic import fft
from render.forensic.layout import TILE, TILE_CHIPS, Layout
from render.forensic.pattern_model import Points

Floats = npt.NDArray[np.float64]
CELL = 2  # px of the mark's frame a side per cell
GRID = TILE // CELL
_BATCH = 32  # trials folded together: about 8 bytes x 6 x points x _BATCH of temporaries
_RESCORED = 32  # trials scored again at full cell resolution


@functools.lru_cache(maxsize=8)
def _template_spectrum(plan: Layout, grid: int) -> fft.Spectrum:
    """The conjugate spectrum of the sync template at a resolution of `grid` cells a side."""
    signs = np.zeros(TILE_CHIPS * TILE_CHIPS)
    signs[plan.sync_chips] = 2.0 * plan.key_bits[plan.sync_chips] - 1.0
    per_chip = grid // TILE_CHIPS
    template = np.kron(signs.reshape(TILE_CHIPS, TILE_CHIPS), np.ones((per_chip, per_chip)))
    spectrum: fft.Spectrum = np.conj(fft.rfft2(template))
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
    folds = np.empty((len(scales), GRID, GRID), dtype=np.float32)
    weights = np.empty(0)
    for start in range(0, len(scales), _BATCH):
        batch = scales[start: start + _BATCH]
        count = len(batch)
        # Either way each trial's bins add its points in their order: the same sums.
        if on_grid:
            # Point by point, each point's cells at every trial of the batch side by side: a
            # table row per position is one short copy (a gather per element cost three
            # times as much).
            first = (np.arange(count, dtype=np.int32) * cells)[None, :]
            column_cell = _cells(int(columns.max()) + 1, batch[:, 0])
            row_cell = _cells(int(rows.max()) + 1, batch[:, 1]) * GRID + first
            index = (row_cell[rows] + column_cell[columns]).ravel()
            if len(weights) != len(index):
                weights = np.repeat(values, count)
        else:
            # Trial by trial, a trial's points side by side: each division is a row's by one
            # number (three times faster than a column's by the batch's row), and a trial's
            # bins are added within its own 9,216, not spread over the batch's. 32-bit: a
            # float's conversion and the wrap are several times faster than at 64.
            first = (np.arange(count, dtype=np.int32) * cells)[:, None]
            ix = _wrapped((along[None, :] / (CELL * batch[:, 0, None])).astype(np.int32))
            iy = _wrapped((across[None, :] / (CELL * batch[:, 1, None])).astype(np.int32))
            index = (iy * GRID + ix + first).ravel()
            if len(weights) != len(index):
                weights = np.tile(values, count)
        # As the platform's integers: NumPy's bincount converts 32-bit ones more slowly than
        # this does (3.3 ms where 1.6 ms for a batch of 960,000), to the same bins.
        sums = np.bincount(index.astype(np.intp), weights, count * cells)
        folds[start: start + count] = -sums.reshape(count, GRID, GRID)
    # Every trial scored on cells twice as large (a quarter of the FFT work, the offset found
    # to 4 px: a mark's score drops by about a fifth), the best _RESCORED again on the cells.
    # (Pairs of rows added first: what a sum over both axes gives, bit for bit, 4 times faster.)
    halves = ((folds[:, 0::2, 0::2] + folds[:, 0::2, 1::2])
              + (folds[:, 1::2, 0::2] + folds[:, 1::2, 1::2]))
    result = np.concatenate([folded_scores(halves[start: start + _BATCH], plan)
                             for start in range(0, len(scales), _BATCH)])
    best = np.argsort(result)[::-1][:_RESCORED]
    result[best] = folded_scores(folds[best].astype(np.float64), plan)
    return result


def sheared_scores(points: Points, scale: float, aspects: Floats, shears: Floats,
                   plan: Layout) -> Floats:
    """The coarse sync score of upright `points` at every aspect of `aspects` with each of
    its shears (`shears`: a row of one shear an aspect per group of trials, a column an
    aspect), flattened: x less the shear times y, folded at `scale` across and `scale` x
    aspect down (a photo framed on the page, `render.forensic.framed`). Every trial at full
    cell resolution, as `scores` gives a trial scored alone, the same numbers (the batched
    FFT's last bits aside). A group of trials is one bincount, every trial one batched FFT,
    and each aspect's row cells are made once for all its shears (a call to `scores` a
    trial: 0.2 s for the 205 trials of a lattice, 0.13 s so)."""
    ys, xs, values = points
    # Aspect by aspect, its points side by side (as `scores` folds off the grid): each bin
    # still adds its points in their order, every position is the same product, sum and
    # quotient, so every fold is the same to the bit, and a row of one aspect is divided by
    # one number and binned within its own cells (a third faster than points by aspects).
    rows = ys - ys.min()
    row_cells = _wrapped((rows[None, :] / (CELL * (scale * aspects[:, None]))).astype(
        np.int32)) * GRID
    row_cells += (np.arange(len(aspects), dtype=np.int32) * GRID * GRID)[:, None]
    weights = np.tile(values, len(aspects))
    folds = np.empty((shears.size, GRID, GRID), dtype=np.float32)
    for group, shear in enumerate(shears):
        # x - s y, as x + (-s) y: the same bits, one temporary fewer.
        along = -shear[:, None] * ys[None, :]
        along += xs[None, :]
        along -= along.min(axis=1, keepdims=True)
        along /= CELL * scale
        index = _wrapped(along.astype(np.int32))
        index += row_cells
        sums = np.bincount(index.ravel().astype(np.intp), weights,
                           len(aspects) * GRID * GRID)
        folds[group * len(aspects): (group + 1) * len(aspects)] = -sums.reshape(
            len(aspects), GRID, GRID)
    return folded_scores(folds.astype(np.float64), plan)


def _cells(length: int, scales: Floats) -> npt.NDArray[np.int32]:
    """Per pixel position 0..length-1 (rows) and scale (columns): the cell it folds into
    (32-bit: the lookups of every point at every scale are the bulk of the work)."""
    positions = np.arange(length)[:, None] / (CELL * scales[None, :])
    table: npt.NDArray[np.int32] = (positions.astype(np.int64) % GRID).astype(np.int32)
    return table


def _wrapped(cell: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """cell % GRID for cells >= 0, by a division that 32-bit integers do quickly."""
    wrapped: npt.NDArray[np.int32] = cell - cell // GRID * GRID
    return wrapped


def folded_scores(darkness: npt.NDArray[np.float64], plan: Layout) -> Floats:
    """The sync scores of tiles folded into square cells (count, grid, grid), darker
    positive, a chip a whole number of cells: each aligned on the template at its
    correlation's peak, then read as chips."""
    count, grid = len(darkness), darkness.shape[1]
    per_chip = grid // TILE_CHIPS
    corr = fft.irfft2(fft.rfft2(darkness) * _template_spectrum(plan, grid), (grid, grid))
    peak = corr.reshape(count, -1).argmax(axis=1)
    dy, dx = peak // grid, peak % grid
    chip = _chip_sums(darkness, dy, dx, per_chip).reshape(count, -1)
    chip -= chip.mean(axis=1, keepdims=True)
    chip /= np.maximum(chip.std(axis=1, keepdims=True), 1e-9)
    sync, signs = plan.sync_chips, 2.0 * plan.key_bits[plan.sync_chips] - 1.0
    result: Floats = chip[:, sync] @ signs / math.sqrt(len(sync))
    return result


def _chip_sums(darkness: npt.NDArray[np.float64], dy: npt.NDArray[np.intp],
               dx: npt.NDArray[np.intp], per_chip: int) -> npt.NDArray[np.float64]:
    """Each tile's chip sums (count, chips, chips): the cyclic box of `per_chip` cells a side
    from its offset (`dy`, `dx`), every `per_chip` cells. Only the chips of the aligned tile
    are added up, not a box at every position (that was a third of a batch of 205 trials'
    scoring, `sheared_scores`); the cells are added in the same order as that box was (down
    each column first, then the columns across), so every sum is the same to the bit."""
    count, grid = len(darkness), darkness.shape[1]
    steps = np.arange(0, grid, per_chip)
    cells = darkness.ravel()
    first = (np.arange(count) * grid * grid)[:, None, None]
    rows = [first + ((dy[:, None] + steps[None, :] + k) % grid)[:, :, None] * grid
            for k in range(per_chip)]
    columns = [((dx[:, None] + steps[None, :] + k) % grid)[:, None, :] for k in range(per_chip)]
    total: npt.NDArray[np.float64] | None = None
    for column in columns:
        down = cells.take(rows[0] + column)
        for row in rows[1:]:
            down += cells.take(row + column)
        total = down if total is None else total + down
    assert total is not None
    return total

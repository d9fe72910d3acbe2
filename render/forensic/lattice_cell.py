"""The pattern's lattice cell: where a page's pixels fall in it, the copies' average over it
(`cell_average`, one histogram of the pixels by position), and that average read back at
pixels (`interpolated`, bilinear between the cell pixels' centres). Float32 coordinates,
wrapped by compares: `pattern_model` and `pattern_plane` build on these."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float32]
_MIN_CELL = 8
_BAND_PIXELS = 1 << 19  # pixels a band of `bands`: about 50 MB of temporaries at most


def _cell_coordinates(ys: npt.NDArray[np.intp], xs: npt.NDArray[np.intp],
                      inverse: npt.NDArray[np.float64], cells: tuple[int, int],
                      ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Where the pixels (ys, xs) fall in the lattice's cell, in cell pixels."""
    return _coordinates(ys.astype(np.float32), xs.astype(np.float32), inverse, cells)


def _coordinates(y: Floats, x: Floats, inverse: npt.NDArray[np.float64],
                 cells: tuple[int, int]) -> tuple[Floats, Floats]:
    """The cell coordinates of rows `y` and columns `x` (float32, paired or broadcast)."""
    a = _fraction(np.float32(inverse[0, 0]) * x + np.float32(inverse[0, 1]) * y) * cells[0]
    b = _fraction(np.float32(inverse[1, 0]) * x + np.float32(inverse[1, 1]) * y) * cells[1]
    return a, b


def _fraction(t: Floats) -> Floats:
    """t % 1.0, bit for bit (the fraction is exact, and so is its single rounding when 1 is
    added to a negative one), in a third of the time."""
    fraction: Floats = t - np.floor(t)
    return fraction


def _wrapped(i: npt.NDArray[np.int32], n: int) -> npt.NDArray[np.int32]:
    """i % n for i in [-n, 2n): a compare, not a division (the lookups below make many)."""
    result: npt.NDArray[np.int32] = np.where(i >= n, i - n, np.where(i < 0, i + n, i))
    return result


def _row_coordinates(top: int, shape: tuple[int, ...], inverse: npt.NDArray[np.float64],
                     cells: tuple[int, int],
                     ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """`_cell_coordinates` of every pixel of the rows from `top` (`shape`: rows, columns), the
    same float32 arithmetic: each product is made once per row or column and broadcast."""
    return _coordinates(np.arange(top, top + shape[0], dtype=np.float32)[:, None],
                        np.arange(shape[1], dtype=np.float32)[None, :], inverse, cells)


def bands(mask: npt.NDArray[np.bool_]) -> Iterator[tuple[npt.NDArray[np.intp],
                                                            npt.NDArray[np.intp]]]:
    """The (ys, xs) of `mask`'s pixels, row-major, a band of rows at a time: the temporaries
    below cost about 100 bytes a point, a few hundred MB at once on a 4 MP image."""
    rows = max(1, _BAND_PIXELS // max(1, mask.shape[1]))
    for top in range(0, mask.shape[0], rows):
        ys, xs = np.nonzero(mask[top:top + rows])
        yield ys + top, xs


class CellAverage(NamedTuple):
    """The pattern's copies averaged into one lattice cell: `cell[a, b]` at cell pixel (a, b),
    `inverse` the page's pixels (x, y) to lattice units (x a fraction of u, of v)."""
    cell: npt.NDArray[np.float64]
    inverse: npt.NDArray[np.float64]


def cell_average(values: Floats, weight: npt.NDArray[np.bool_],
                 lattice: npt.NDArray[np.float64]) -> CellAverage:
    """The copies' average over the pixels where `weight` holds: one histogram of the pixels
    by position in the lattice's cell."""
    u, v = lattice[0], lattice[1]
    area = abs(u[0] * v[1] - u[1] * v[0])
    cells = (max(_MIN_CELL, round(math.hypot(*u))),
             max(_MIN_CELL, round(area / max(math.hypot(*u), 1.0))))
    inverse = np.linalg.inv(np.array([[u[0], v[0]], [u[1], v[1]]]))
    size = cells[0] * cells[1]
    sums, counts = np.zeros(size), np.zeros(size)
    # Most pixels are weighted (the paper is), so every pixel of a band of rows is binned, the
    # others with weight 0 (a sum is the same with zeros added): no list of the weighted
    # pixels' positions to make and gather from, half the time.
    rows = max(1, _BAND_PIXELS // max(1, values.shape[1]))
    for top in range(0, values.shape[0], rows):
        band = slice(top, top + rows)
        a, b = _row_coordinates(top, values[band].shape, inverse, cells)
        # Modulo again: float32 rounds a fraction just under 1 up to 1, one cell past the end.
        index = (_wrapped(a.astype(np.int32), cells[0]) * cells[1]
                 + _wrapped(b.astype(np.int32), cells[1]))
        weighted = weight[band].ravel()
        sums += np.bincount(index.ravel(), np.where(weighted, values[band].ravel(), 0.0), size)
        counts += np.bincount(index.ravel(), weighted, size)
    return CellAverage((sums / np.maximum(counts, 1)).reshape(cells), inverse)


def interpolated(cell: npt.NDArray[np.float64], cells: tuple[int, int],
                 inverse: npt.NDArray[np.float64], ys: npt.NDArray[np.intp],
                 xs: npt.NDArray[np.intp]) -> Floats:
    """The cell's averages at the pixels (ys, xs), bilinear between the cell pixels' centres."""
    a, b = _cell_coordinates(ys, xs, inverse, cells)
    a, b = a - 0.5, b - 0.5
    a0, b0 = np.floor(a), np.floor(b)
    fa, fb = a - a0, b - b0
    ia, ib = a0.astype(np.int32), b0.astype(np.int32)
    flat = cell.ravel()
    model = np.zeros(len(ys), dtype=np.float64)
    for da, wa in ((0, 1 - fa), (1, fa)):
        for db, wb in ((0, 1 - fb), (1, fb)):
            index = _wrapped(ia + da, cells[0]) * cells[1] + _wrapped(ib + db, cells[1])
            model += flat[index] * wa * wb
    result: Floats = model.astype(np.float32)
    return result

"""The pattern's copies' average at every pixel of a leak (`pattern_model.pattern_model` with
every pixel wanted), drawn by Pillow's affine resampling of the averaged cell, tiled over
the page's span in lattice units: about 40 ms for a served page where the bilinear lookups
pixel by pixel took 140 ms (the cell's average, 35 ms, either way), the same values to within
0.05 of a grey level (their coordinates rounded differently in float32)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic.lattice_cell import cell_average

Floats = npt.NDArray[np.float32]


def pattern_plane(values: Floats, weight: npt.NDArray[np.bool_],
                  lattice: npt.NDArray[np.float64]) -> Floats:
    """The copies' average (over the pixels where `weight` holds) at every pixel of `values`."""
    cell, inverse = cell_average(values, weight, lattice)
    height, width = values.shape
    rows, columns = cell.shape
    # Pixel (x, y) sits at (A, B) = (rows * (inverse @ (x, y))) in cell pixels, the cell repeated
    # along both: its corners bound the tiles needed, one more each side for the bilinear's reach.
    to_cell = inverse * np.array([[rows], [columns]])
    corners = to_cell @ np.array([[0, width, 0, width], [0, 0, height, height]], dtype=np.float64)
    first = np.floor(corners.min(axis=1) / (rows, columns)).astype(int) - 1
    last = np.ceil(corners.max(axis=1) / (rows, columns)).astype(int) + 1
    # About 3.5 times the leak's pixels (the bounding box of its slanted span): still a third
    # of the lookups' time.
    tiled = np.tile(cell.astype(np.float32), (last[0] - first[0], last[1] - first[1]))
    start = first * (rows, columns)
    # Pillow evaluates the map at the output's pixel centres (x + 0.5, y + 0.5), the lookups at
    # (x, y): that half pixel is taken back. Both put cell pixel k's value at k + 0.5.
    (aa, ab), (ba, bb) = to_cell
    shift_a = -0.5 * (aa + ab) - start[0]
    shift_b = -0.5 * (ba + bb) - start[1]
    drawn = Image.fromarray(tiled, "F").transform(
        (width, height), Image.Transform.AFFINE, (ba, bb, shift_b, aa, ab, shift_a),
        resample=Image.Resampling.BILINEAR)
    plane: Floats = np.asarray(drawn, dtype=np.float32)
    return plane

"""What scoring a fold costs, without changing a score (docs/leak-tracing-records.md, "What a miss
costs, profiled"): a batch of coarse folds adds up only the chips of each fold's aligned tile
(`coarse._chip_sums`), to the bit the sums of a box at every position gave; and the framed
reading aligns and scores a fold of chance once (`framed._read`: every fold of an unmarked
photo), where it did twice; and a flattened copy's autocorrelation peaks are found as they
were (`pattern_model.local_maxima`, each neighbour wrapped once)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from render.forensic import chips, coarse, framed, pattern_model, perspective, sync
from render.forensic.layout import PUBLIC, TILE_CHIPS

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def _box_chips(darkness: npt.NDArray[np.floating], dy: npt.NDArray[np.intp],
               dx: npt.NDArray[np.intp], per_chip: int) -> npt.NDArray[np.floating]:
    """The chip sums as `coarse.folded_scores` made them before: a cyclic box of `per_chip`
    cells at every position (down the columns, then across), the aligned tile's picked out."""
    count, grid = len(darkness), darkness.shape[1]
    box = darkness.copy()
    for shift in range(1, per_chip):
        box += np.roll(darkness, -shift, axis=1)
    rows = box.copy()
    for shift in range(1, per_chip):
        box += np.roll(rows, -shift, axis=2)
    steps = np.arange(0, grid, per_chip)
    from_y = (dy[:, None] + steps[None, :]) % grid
    from_x = (dx[:, None] + steps[None, :]) % grid
    picked: npt.NDArray[np.floating] = box[np.arange(count)[:, None, None], from_y[:, :, None],
                                           from_x[:, None, :]]
    return picked


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("grid", [2 * TILE_CHIPS, 4 * TILE_CHIPS])
def test_chip_sums_are_the_box_s_to_the_bit(dtype: type, grid: int) -> None:
    # The scan's halved cells come as float32, the framed reading's as float64: both kept.
    rng = np.random.default_rng(grid)
    darkness = (rng.normal(size=(37, grid, grid)) * rng.uniform(0.01, 300)).astype(dtype)
    # Offsets everywhere, the last rows and columns too (the sums wrap round the tile).
    dy = rng.integers(0, grid, 37)
    dx = rng.integers(0, grid, 37)
    dy[:2], dx[:2] = grid - 1, grid - 1
    sums = coarse._chip_sums(darkness, dy, dx, grid // TILE_CHIPS)
    expected = _box_chips(darkness, dy, dx, grid // TILE_CHIPS)
    assert sums.dtype == expected.dtype
    assert np.array_equal(sums, expected)


def test_a_fold_of_chance_is_aligned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A flattened copy of flat noisy paper (no mark): every candidate's fold is chance's,
    # under the sync threshold, and costs one alignment on the template, not two.
    rng = np.random.default_rng(7)
    paper = np.clip(rng.normal(200, 6, size=(420, 380)), 0, 255).astype(np.uint8)
    flat = Image.fromarray(paper, mode="L")
    candidates = [(1.0, 0.0), (1.02, 0.005), (0.97, -0.004), (1.05, 0.01)]
    monkeypatch.setattr(framed, "_candidates", lambda *_: candidates)
    aligned_calls = []
    real_aligned = chips.aligned

    def counted(folded: npt.NDArray[np.float32], plan: object) -> npt.NDArray[np.float32]:
        aligned_calls.append(1)
        return real_aligned(folded, PUBLIC)

    monkeypatch.setattr(chips, "aligned", counted)
    length = 120.0
    across = np.array([length * math.cos(0.1), length * math.sin(0.1)])
    assert framed._read(flat, across, perspective.ROWS + 0.1, PUBLIC) is None
    assert len(aligned_calls) == len(candidates)


def _tested_maxima(acf: npt.NDArray[np.float32], min_lag: int, count: int,
                   ) -> list[tuple[int, int, float]]:
    """`pattern_model.local_maxima` as it was written before (each neighbour's row and
    column wrapped at its own test, the lags masked once a peak), on planes whose highest
    4,096 points hold `count` maxima (no max filter over the whole plane)."""
    height, width = acf.shape
    half = acf[: height - height // 2].copy()
    near_y = np.arange(min(min_lag, len(half)))[:, None]
    reach = min(min_lag, width)
    for columns in (np.arange(reach), np.arange(width - reach, width)):
        dx = (columns + width // 2) % width - width // 2
        inside = np.hypot(dx[None, :], near_y) < min_lag
        block = half[: len(near_y), columns]
        block[inside] = -np.inf
        half[: len(near_y), columns] = block
    half[0, width - width // 2:] = -np.inf
    half[0, 0] = -np.inf
    flat = half.ravel()
    top = np.argpartition(flat, -4096)[-4096:]
    top = top[np.isfinite(flat[top])]
    ys, xs = top // width, top % width
    values = flat[top]
    peak = np.ones(len(ys), dtype=bool)
    for oy in range(-2, 3):
        for ox in range(-2, 3):
            if oy or ox:
                peak &= values >= acf[(ys + oy) % height, (xs + ox) % width]
    dy = (ys + height // 2) % height - height // 2
    dx = (xs + width // 2) % width - width // 2
    assert peak.sum() >= count
    values = values[peak]
    order = np.argsort(values)[::-1][:count]
    return [(int(dx[peak][k]), int(dy[peak][k]), float(values[k])) for k in order]


@pytest.mark.parametrize("count", [12, 48])
def test_the_autocorrelation_s_peaks_are_the_same(count: int) -> None:
    # Residual-like noise over a lattice, as a flattened copy's autocorrelation shows it.
    rng = np.random.default_rng(count)
    ys, xs = np.mgrid[:517, :611]
    plane = (rng.normal(size=ys.shape) + np.sin(xs / 7.3 + ys / 13.1)).astype(np.float32)
    acf = sync.autocorrelation(plane)
    found = pattern_model.local_maxima(acf, 40, count)
    assert len(found) == count
    assert found == _tested_maxima(acf, 40, count)

"""The folds and profiles a miss pays for, laid out for speed without changing a number
(docs/leak-tracing-records.md, "What a miss costs, laid out"): each primitive below gives, to the
bit, what its former body (kept here) gave, and is made the faster way (the test of the
way fails on the former body).

- `scan.fine_fold` wraps each point's two columns and two rows once, not at each of its
  four corners (`scan._wrapped_pair`).
- `coarse.scores` off the pixel grid and `coarse.sheared_scores` bin a trial's points side
  by side (trial-major), as the platform's integers.
- `line_field._energies` squares and sums its counts as integers.
- `sync.autocorrelation` makes its power and its normalising in place; a peak's window is a
  view of the plane where no lag wraps (`sync.wrapped_window`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from render.forensic import coarse, fft, line_field, scan, sync
from render.forensic.layout import PUBLIC, TILE
from render.forensic.pattern_model import Points

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop
Floats = npt.NDArray[np.float64]


def _points(seed: int, count: int, on_grid: bool = False) -> Points:
    rng = np.random.default_rng(seed)
    ys, xs = rng.uniform(-700, 700, count), rng.uniform(-500, 500, count)
    if on_grid:
        ys, xs = np.round(ys), np.round(xs)
    return ys, xs, rng.normal(0.0, 3.0, count)


def _former_fine_fold(points: Points, scale: float, angle: float) -> npt.NDArray[np.float32]:
    """`scan.fine_fold` as it was: each corner's row and column wrapped at its own turn."""
    ys, xs, values = points
    cos, sin = math.cos(angle), math.sin(angle)
    qx, qy = (cos * xs + sin * ys) / scale, (cos * ys - sin * xs) / scale
    x0, y0 = np.floor(qx - 0.5), np.floor(qy - 0.5)
    fx, fy = qx - 0.5 - x0, qy - 0.5 - y0
    ix, iy = x0.astype(np.int64), y0.astype(np.int64)
    sums, weights = np.zeros(TILE * TILE), np.zeros(TILE * TILE)
    for dx, wx in ((0, 1 - fx), (1, fx)):
        for dy, wy in ((0, 1 - fy), (1, fy)):
            index = ((iy + dy) % TILE) * TILE + (ix + dx) % TILE
            sums += np.bincount(index, values * wx * wy, TILE * TILE)
            weights += np.bincount(index, wx * wy, TILE * TILE)
    mean = np.where(weights > 0.05, sums / np.maximum(weights, 1e-3), 0.0)
    return mean.reshape(TILE, TILE).astype(np.float32)


@pytest.mark.parametrize("scale, angle", [(0.31, 0.0), (0.77, 0.0), (1.43, 0.21), (0.55, -0.4)])
def test_a_fine_fold_is_the_former_one_to_the_bit(scale: float, angle: float) -> None:
    points = _points(round(scale * 100), 50_000)
    assert np.array_equal(scan.fine_fold(points, scale, angle),
                          _former_fine_fold(points, scale, angle))


def test_a_fine_fold_wraps_each_point_s_rows_and_columns_once() -> None:
    floors = np.array([-TILE - 1.0, -1.0, 0.0, TILE - 1.0, TILE, 5 * TILE + 3])
    first, second = scan._wrapped_pair(floors)
    assert first.tolist() == [TILE - 1, TILE - 1, 0, TILE - 1, 0, 3]
    assert second.tolist() == [0, 0, 1, 0, 1, 4]


def _former_scores(points: Points, scales: Floats, angle: float) -> Floats:
    """`coarse.scores` as it was off the grid: points by trials, 32-bit bins."""
    ys, xs, values = points
    cos, sin = math.cos(angle), math.sin(angle)
    along, across = cos * xs + sin * ys, cos * ys - sin * xs
    along, across = along - along.min(), across - across.min()
    grid, cells = coarse.GRID, coarse.GRID * coarse.GRID
    folds = np.empty((len(scales), grid, grid), dtype=np.float32)
    for start in range(0, len(scales), coarse._BATCH):
        batch = scales[start: start + coarse._BATCH]
        count = len(batch)
        first = (np.arange(count, dtype=np.int32) * cells)[None, :]
        ix = coarse._wrapped((along[:, None] / (coarse.CELL * batch[None, :, 0])).astype(np.int32))
        iy = coarse._wrapped((across[:, None] / (coarse.CELL * batch[None, :, 1])).astype(
            np.int32))
        sums = np.bincount((iy * grid + ix + first).ravel(), np.repeat(values, count),
                           count * cells)
        folds[start: start + count] = -sums.reshape(count, grid, grid)
    halves = ((folds[:, 0::2, 0::2] + folds[:, 0::2, 1::2])
              + (folds[:, 1::2, 0::2] + folds[:, 1::2, 1::2]))
    result = np.concatenate([coarse.folded_scores(halves[start: start + coarse._BATCH], PUBLIC)
                             for start in range(0, len(scales), coarse._BATCH)])
    best = np.argsort(result)[::-1][:coarse._RESCORED]
    result[best] = coarse.folded_scores(folds[best].astype(np.float64), PUBLIC)
    return result


def _scan_scales(count: int) -> Floats:
    lengths = np.exp(np.arange(math.log(0.3), math.log(1.8), 0.004))[:count]
    return np.stack([lengths, lengths * 1.01], axis=1)


@pytest.mark.parametrize("count", [1, 45, 450])
def test_coarse_scores_off_the_grid_are_the_former_ones_to_the_bit(count: int) -> None:
    points = _points(count, 20_000)
    scales = _scan_scales(count)
    assert np.array_equal(coarse.scores(points, scales, 0.37, PUBLIC),
                          _former_scores(points, scales, 0.37))


def test_coarse_scores_on_the_grid_are_those_off_it() -> None:
    # Upright points on the pixel grid take the table's way; the same numbers.
    points = _points(3, 20_000, on_grid=True)
    scales = _scan_scales(70)
    assert np.array_equal(coarse.scores(points, scales, 0.0, PUBLIC),
                          _former_scores(points, scales, 0.0))


def _binned(monkeypatch: pytest.MonkeyPatch) -> list[npt.NDArray[np.integer]]:
    """The index arrays `np.bincount` is given while the test runs."""
    seen: list[npt.NDArray[np.integer]] = []
    bincount: Callable[..., Floats] = np.bincount

    def recorded(index: npt.NDArray[np.integer], *args: object) -> Floats:
        seen.append(index)
        return bincount(index, *args)

    monkeypatch.setattr(np, "bincount", recorded)
    return seen


def test_the_coarse_folds_bin_a_trial_s_points_side_by_side(
        monkeypatch: pytest.MonkeyPatch) -> None:
    count, points = 20_000, _points(5, 20_000)
    seen = _binned(monkeypatch)
    coarse.scores(points, _scan_scales(45), 0.37, PUBLIC)
    aspects = np.exp(np.arange(-0.1, 0.1 + 1e-9, 0.005))
    shears = np.array([0.004 + offset + 0.01 * (aspects - 1) for offset in (-0.005, 0.005)])
    coarse.sheared_scores(points, 0.6, aspects, shears, PUBLIC)
    assert len(seen) == 2 + len(shears)  # two batches of scales, a group a shear
    cells = coarse.GRID * coarse.GRID
    for index in seen:
        assert index.dtype == np.intp
        trials = index.reshape(-1, count) // cells  # trial-major: a row's bins its trial's
        assert np.array_equal(trials, np.broadcast_to(np.arange(len(trials))[:, None],
                                                      trials.shape))


def _former_sheared(points: Points, scale: float, aspects: Floats, shears: Floats) -> Floats:
    """`coarse.sheared_scores` as it was: points by aspects."""
    ys, xs, values = points
    grid = coarse.GRID
    rows = ys - ys.min()
    row_cells = coarse._wrapped((rows[:, None] / (coarse.CELL * (scale * aspects[None, :])))
                                .astype(np.int32)) * grid
    row_cells += (np.arange(len(aspects), dtype=np.int32) * grid * grid)[None, :]
    weights = np.repeat(values, len(aspects))
    folds = np.empty((shears.size, grid, grid), dtype=np.float32)
    for group, shear in enumerate(shears):
        along = ys[:, None] * -shear[None, :]
        along += xs[:, None]
        along -= along.min(axis=0)
        along /= coarse.CELL * scale
        index = coarse._wrapped(along.astype(np.int32))
        index += row_cells
        sums = np.bincount(index.ravel(), weights, len(aspects) * grid * grid)
        folds[group * len(aspects): (group + 1) * len(aspects)] = -sums.reshape(
            len(aspects), grid, grid)
    return coarse.folded_scores(folds.astype(np.float64), PUBLIC)


def test_sheared_scores_are_the_former_ones_to_the_bit() -> None:
    points = _points(11, 30_000)
    aspects = np.exp(np.arange(-0.1, 0.1 + 1e-9, 0.005))
    shears = np.array([0.004 + offset + 0.01 * (aspects - 1)
                       for offset in (-0.01, -0.005, 0.0, 0.005, 0.01)])
    assert np.array_equal(coarse.sheared_scores(points, 0.83, aspects, shears, PUBLIC),
                          _former_sheared(points, 0.83, aspects, shears))


def _former_energies(ys: Floats, xs: Floats, angles: Floats) -> Floats:
    rows = ys[None, :] * np.cos(angles)[:, None] - xs[None, :] * np.sin(angles)[:, None]
    index = np.rint(rows - rows.min()).astype(np.int64)
    length = int(index.max()) + 1
    index += np.arange(len(angles))[:, None] * length
    counts = np.bincount(index.ravel(), minlength=len(angles) * length).astype(np.float64)
    energy: Floats = (counts.reshape(len(angles), length) ** 2).sum(axis=1)
    return energy


def test_a_profile_s_energies_are_the_former_ones_to_the_bit() -> None:
    rng = np.random.default_rng(2)
    # Points piled along lines at -30 degrees (the pattern's rows), as a window holds them.
    along = rng.uniform(0, 200, 2_500)
    offset = rng.integers(0, 12, 2_500) * 17.0 + rng.normal(0, 0.6, 2_500)
    ys = np.round(offset * math.cos(math.radians(30)) - along * math.sin(math.radians(30)))
    xs = np.round(offset * math.sin(math.radians(30)) + along * math.cos(math.radians(30)))
    angles = np.radians(np.arange(*line_field.PATTERN_DIRECTIONS, 0.5))
    energy = line_field._energies(ys, xs, angles)
    assert energy.dtype == np.float64
    assert np.array_equal(energy, _former_energies(ys, xs, angles))


def test_an_autocorrelation_is_the_former_one_to_the_bit() -> None:
    rng = np.random.default_rng(4)
    ys, xs = np.mgrid[:463, :624]
    plane = (rng.normal(size=ys.shape) + np.sin(xs / 9.1 + ys / 15.3)).astype(np.float32)
    shape = (sync._smooth_size(463), sync._smooth_size(624))
    spectrum = fft.rfft2(plane - plane.mean(), shape)
    former = fft.irfft2(spectrum.real ** 2 + spectrum.imag ** 2, shape)
    former = former / max(float(former[0, 0]), 1e-9)
    acf = sync.autocorrelation(plane)
    assert acf.dtype == former.dtype and np.array_equal(acf, former)


def test_a_window_is_a_view_where_no_lag_wraps_and_the_gather_elsewhere() -> None:
    acf = np.random.default_rng(8).normal(size=(48, 64)).astype(np.float32)
    for x0, y0, side in ((3, 4, 5), (-2, 10, 5), (60, 45, 7), (0, 0, 48), (-70, -50, 3)):
        xs, ys = np.arange(x0, x0 + side), np.arange(y0, y0 + side)
        window = sync.wrapped_window(acf, xs, ys)
        assert np.array_equal(window, acf[np.ix_(ys % 48, xs % 64)])
        inside = x0 >= 0 and x0 + side <= 64 and y0 >= 0 and y0 + side <= 48
        assert np.shares_memory(window, acf) == inside

"""The decoder's fast arithmetic against the plain one it replaced: the same numbers, bit for
bit (a trace's verdict must not depend on how quickly it was reached)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image, ImageFilter

from render.forensic import coarse, layout, pattern_model, sync
from render.forensic.layout import keyed
from render.forensic.pattern_plane import pattern_plane
from tests.forensic_pages import marked_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def _plain_model(values: np.ndarray, weight: np.ndarray, lattice: np.ndarray,
                 wanted: np.ndarray) -> np.ndarray:
    """The pattern's model as first written: the weighted pixels listed, `%` for every wrap."""
    u, v = lattice
    length = math.hypot(*u)
    cells = (max(8, round(length)), max(8, round(abs(u[0] * v[1] - u[1] * v[0]) / length)))
    inverse = np.linalg.inv(np.array([[u[0], v[0]], [u[1], v[1]]]))

    def coordinates(ys: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        y, x = ys.astype(np.float32), xs.astype(np.float32)
        a = (np.float32(inverse[0, 0]) * x + np.float32(inverse[0, 1]) * y) % 1.0 * cells[0]
        b = (np.float32(inverse[1, 0]) * x + np.float32(inverse[1, 1]) * y) % 1.0 * cells[1]
        return a.astype(np.float32), b.astype(np.float32)

    ys, xs = np.nonzero(weight)
    a, b = coordinates(ys, xs)
    index = (a.astype(np.int64) % cells[0]) * cells[1] + b.astype(np.int64) % cells[1]
    size = cells[0] * cells[1]
    cell = (np.bincount(index, values[ys, xs], size)
            / np.maximum(np.bincount(index, None, size), 1)).reshape(cells)
    a, b = coordinates(*np.nonzero(wanted))
    a, b = a - 0.5, b - 0.5
    fa, fb = a - np.floor(a), b - np.floor(b)
    ia, ib = np.floor(a).astype(np.int64), np.floor(b).astype(np.int64)
    model = np.zeros(len(a))
    for da, wa in ((0, 1 - fa), (1, fa)):
        for db, wb in ((0, 1 - fb), (1, fb)):
            model += cell[(ia + da) % cells[0], (ib + db) % cells[1]] * wa * wb
    return model.astype(np.float32)


@pytest.mark.parametrize("lattice", [[[292.0, 202.0], [270.0, 30.0]],
                                     [[251.3, -143.9], [40.2, 305.7]],
                                     [[-180.4, 99.1], [120.0, 233.3]]])
def test_pattern_model_is_the_plain_model_bit_for_bit(lattice: list[list[float]]) -> None:
    # The model bins whole bands of rows (weight 0 for the pixels left out) and wraps by
    # compare, not `%`: the same sums in the same order, so the same floats.
    rng = np.random.default_rng(11)
    values = rng.integers(0, 256, (700, 900)).astype(np.float32)
    weight, wanted = values >= 60, rng.random(values.shape) < 0.2
    expected = _plain_model(values, weight, np.array(lattice), wanted)
    model = pattern_model.pattern_model(values, weight, np.array(lattice), wanted)
    assert model.dtype == expected.dtype and np.array_equal(model, expected)


@pytest.mark.parametrize("lattice", [[[292.0, 202.0], [270.0, 30.0]],
                                     [[-49.1, 346.8], [325.2, 131.0]],
                                     [[-180.4, 99.1], [120.0, 233.3]]])
def test_the_pattern_plane_is_the_model_at_every_pixel(lattice: list[list[float]]) -> None:
    # Pillow's affine resampling of the tiled cell against the lookups pixel by pixel: the
    # same bilinear weights at coordinates rounded differently in float32 (about 1e-4 px), on
    # noise whose neighbouring cell pixels differ by up to 255 levels: 0.05 levels at most.
    rng = np.random.default_rng(12)
    values = rng.integers(0, 256, (700, 900)).astype(np.float32)
    weight, everywhere = values >= 60, np.ones(values.shape, dtype=bool)
    expected = pattern_model.pattern_model(values, weight, np.array(lattice), everywhere)
    plane = pattern_plane(values, weight, np.array(lattice))
    assert plane.shape == values.shape and plane.dtype == np.float32
    apart = np.abs(plane.ravel() - expected)
    assert apart.max() < 0.05 and apart.mean() < 0.005


def _plain_residual(grey: Image.Image, radius: float) -> np.ndarray:
    blurred = np.asarray(grey.filter(ImageFilter.BoxBlur(radius)), dtype=np.float32)
    detail = np.asarray(grey, dtype=np.float32) - blurred
    busy = Image.fromarray(((np.abs(detail) > sync.BUSY) * 255).astype(np.uint8), mode="L")
    detail[np.asarray(busy.filter(ImageFilter.BoxBlur(2))) > 0] = 0.0
    return detail


@pytest.mark.parametrize("radius", [1.0, 2.0, 3.7, 6.1])
def test_the_residual_in_16_bit_integers_is_the_float_one(radius: float) -> None:
    grey = marked_cover(0x15A2B3C4D5E).convert("L")
    expected = _plain_residual(grey, radius)
    assert np.array_equal(sync.residual(grey, radius), expected)
    assert sync.residual(grey, radius).dtype == np.float32
    assert (expected != 0).mean() > 0.1  # the marked paper speaks: the test compares something


def _plain_coarse_scores(points: tuple[np.ndarray, np.ndarray, np.ndarray],
                         scales: np.ndarray, angle: float, plan: layout.Layout) -> np.ndarray:
    """`coarse.scores` as first written: a trial per row, `%` for every wrap, the halves as
    a sum over two axes."""
    ys, xs, values = points
    cos, sin = math.cos(angle), math.sin(angle)
    along, across = cos * xs + sin * ys, cos * ys - sin * xs
    along, across = along - along.min(), across - across.min()
    grid, cells = coarse.GRID, coarse.GRID * coarse.GRID
    folds = np.empty((len(scales), grid, grid), dtype=np.float32)
    for n, (sx, sy) in enumerate(scales):
        ix = (along / (coarse.CELL * sx)).astype(np.intp) % grid
        iy = (across / (coarse.CELL * sy)).astype(np.intp) % grid
        folds[n] = -np.bincount(iy * grid + ix, values, cells).reshape(grid, grid)
    halves = folds.reshape(len(scales), grid // 2, 2, grid // 2, 2).sum(axis=(2, 4))
    result = coarse.folded_scores(halves, plan)
    best = np.argsort(result)[::-1][:32]
    result[best] = coarse.folded_scores(folds[best].astype(np.float64), plan)
    return result


@pytest.mark.parametrize("angle", [0.0, 0.0349])
def test_coarse_trials_point_by_point_are_the_plain_ones(angle: float) -> None:
    rng = np.random.default_rng(5)
    ys = rng.integers(0, 1500, 20_000).astype(np.float64) - 750.0
    xs = rng.integers(0, 1100, 20_000).astype(np.float64) - 550.0
    values = rng.normal(0.0, 3.0, 20_000)
    scales = np.exp(np.linspace(math.log(0.5), math.log(1.5), 70))  # 3 batches, the last short
    trials = np.stack([scales, scales * 1.02], axis=1)
    plan = keyed(b"k" * 32)
    expected = _plain_coarse_scores((ys, xs, values), trials, angle, plan)
    found = coarse.scores((ys, xs, values), trials, angle, plan)
    assert np.array_equal(found, expected)

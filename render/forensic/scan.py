"""The mark's scale found by trying them all, for readings too sparse for the autocorrelation.

After brightness +20 % the mark lives only on the visible pattern's ink, a few per cent of the
pixels: the autocorrelation's peak at the tile vector is then buried (two ink pixels a tile
apart are rare), while a fold at the right scale still adds up every ink pixel's share. So the
scales 0.3-1.8 (from 0.2 in an image read at full size) are tried in steps of 0.4 % (about
450, at one angle; 100 more under 0.3), each by a cheap fold of the ink pixels alone (a
histogram of their positions modulo the tile) and its correlation with the sync template;
the best few are refined in steps of 0.05 % with a bilinear fold, and the best of those
decoded. Each trial costs about half a millisecond.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from render.forensic import chips, coarse, layout, sync
from render.forensic.layout import TILE, Layout
from render.forensic.pattern_model import Points

Floats = npt.NDArray[np.float32]
MIN_POINTS = 500
STEP = 0.004  # ln(scale) between coarse trials: the peak is about 1 % wide on a page
_USUAL = np.exp(np.arange(math.log(sync.MIN_SCALE), math.log(sync.MAX_SCALE), STEP))
# Under 0.3 down to sync.SMALL_SCALE on the same grid (the usual trials unmoved), tried where
# the caller's `least` allows them: an image read at full size (`sync.read_at_full_size`).
_SMALL = np.exp(math.log(sync.MIN_SCALE) - STEP * np.arange(
    math.floor(math.log(sync.MIN_SCALE / sync.SMALL_SCALE) / STEP), 0, -1))
_SCALES = np.concatenate([_SMALL, _USUAL])
_FINE = 8  # fine trials either side of a coarse one, STEP / _FINE apart
_REFINED = 3  # coarse candidates refined
_KEPT = 2  # fine trials decoded per refined candidate
_WORTH_REFINING = 4.0  # sync score (unmarked images: 3-4.5 at their best scale)
# A peak's fine fold at its coarse scale must score this to be refined (measured: unmarked
# images 3.4 median, 4.2 at p90; a mark read by the scan 6.3 and more).
PROBE = 4.5
# Time bound: about 0.5 ms a coarse trial with this many points, 2 ms a fine one (120,000
# points read no page more than 60,000: a large image is an upscaled one).
_COARSE_POINTS = 30_000
MAX_POINTS = 60_000
# Flips among the 6 least reliable bits, 3 at most (42 CRC trials), cheapest first, behind
# sync >= 6. Measured: 5 bits miss 640 px pages that 6 read; 8 bits, or 4 flips and more, let
# a wrong id through its CRC (its distance is 4: two wrong bits plus four flips reach another
# id); 2 flips miss a 640 px page that 3 read.
CHASE_BITS = 6
MAX_FLIPS = 3
SYNC_THRESHOLD = 6.0  # standard deviations: the sync chips' agreement before any CRC trial


def _positions(points: Points, scale: float, angle: float,
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    ys, xs, _ = points
    cos, sin = math.cos(angle), math.sin(angle)
    return (cos * xs + sin * ys) / scale, (cos * ys - sin * xs) / scale


def fine_fold(points: Points, scale: float, angle: float) -> Floats:
    """Mean value of the points falling on each pixel of the mark's tile, each point shared
    bilinearly among its four nearest tile pixels."""
    qx, qy = _positions(points, scale, angle)
    qx -= 0.5
    qy -= 0.5
    x0, y0 = np.floor(qx), np.floor(qy)
    fx, fy = qx - x0, qy - y0
    # Each point's two columns and two rows, wrapped once (not at each of the four corners:
    # the modulo of 64-bit integers was half the fold), and the value-weighted column shares
    # made once for both rows: every product, every bin and the order of the sums as before,
    # so the fold is the same to the bit (tests/test_forensic_fold_scoring.py).
    columns = _wrapped_pair(x0)
    rows = _wrapped_pair(y0)
    rows = (rows[0] * TILE, rows[1] * TILE)
    sums, weights = np.zeros(TILE * TILE), np.zeros(TILE * TILE)
    for column, wx in zip(columns, (1 - fx, fx), strict=True):
        valued = points[2] * wx
        for row, wy in zip(rows, (1 - fy, fy), strict=True):
            index = row + column
            sums += np.bincount(index, valued * wy, TILE * TILE)
            weights += np.bincount(index, wx * wy, TILE * TILE)
    mean = np.where(weights > 0.05, sums / np.maximum(weights, 1e-3), 0.0)
    folded: Floats = mean.reshape(TILE, TILE).astype(np.float32)
    return folded


def _wrapped_pair(floor: npt.NDArray[np.float64],
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The tile pixel of each whole `floor` and of the one after it (mod TILE)."""
    first = floor.astype(np.int64) % TILE
    second = first + 1
    second[second == TILE] = 0
    return first, second


def chase(votes: npt.NDArray[np.float64], flips: int) -> int | None:
    """The id whose bits pass the CRC, trying the hard decision and then the patterns of at
    most MAX_FLIPS flips among the `flips` least reliable bits, cheapest first (the sum of the
    flipped bits' reliabilities): the likeliest id, not merely the first found (Chase)."""
    hard = (votes > 0).astype(np.uint8)
    weakest = np.argsort(np.abs(votes))[:flips]
    reliability = np.abs(votes[weakest])
    patterns = np.arange(1 << flips)
    chosen = (patterns[:, None] >> np.arange(flips)[None, :]) & 1
    chosen = chosen[chosen.sum(axis=1) <= MAX_FLIPS]
    for pattern in np.argsort(chosen @ reliability, kind="stable"):
        bits = hard.copy()
        bits[weakest[chosen[pattern] == 1]] ^= 1
        render_id = layout.unpack(bits)
        if render_id is not None:
            return render_id
    return None


def thinned(points: Points, most: int) -> Points:
    """Every k-th point, at most `most` of them (a fixed subset: the decode is repeatable)."""
    step = math.ceil(len(points[2]) / most)
    if step <= 1:
        return points
    ys, xs, values = points
    return ys[::step], xs[::step], values[::step]


def best_scales(points: Points, angle: float, plan: Layout, least: float = 0.0,
                ) -> list[tuple[float, float]]:
    """(sync score, scale) of the _REFINED best coarse trials worth refining, each refined,
    its _KEPT best fine trials, best first; scales under `least` are not tried. A peak's best
    fine trial is not always the one whose payload passes the CRC."""
    sample = thinned(points, _COARSE_POINTS)
    scales = _SCALES[least <= _SCALES]
    if len(scales) == 0:
        return []
    coarse_scores = coarse.scores(sample, np.stack([scales, scales], axis=1), angle, plan)
    trials = sorted(zip(coarse_scores.tolist(), scales.tolist(), strict=True), reverse=True)
    refined: list[tuple[float, float]] = []
    tried: list[float] = []
    for value, scale in trials:
        if value < _WORTH_REFINING or len(tried) == _REFINED:
            break
        if any(abs(math.log(scale / other)) < 1.5 * STEP for other in tried):
            continue  # the neighbour of one refined already: the same peak
        tried.append(scale)
        # The coarse trial's own scale folded finely first: a peak of chance (every unmarked
        # image has a few near 4-5 among 450 trials) falls back under PROBE, a mark's stays.
        probe = fold_score(fine_fold(points, scale, angle), plan)
        if probe < PROBE:
            continue
        nearby = [scale * math.exp(k * STEP / _FINE) for k in range(-_FINE, _FINE + 1) if k]
        fine = sorted([(probe, scale)] + [(fold_score(fine_fold(points, s, angle), plan), s)
                                          for s in nearby], reverse=True)
        refined.extend(fine[:_KEPT])
    return sorted(refined, reverse=True)


def fold_score(folded: Floats, plan: Layout) -> float:
    """The sync score of a folded tile (aligned on the template first)."""
    return chips.sync_score(chips.aligned(folded, plan), plan)


def first_decoded(folds: Iterable[Floats], plan: Layout) -> tuple[int, float] | None:
    """(render id, sync score) of the first of `folds` (folded tiles, made as they are asked
    for) whose sync chips score SYNC_THRESHOLD and whose payload passes the CRC (`chase`), or
    None: the checks every reading of a fold ends with."""
    for folded in folds:
        tile = chips.aligned(folded, plan)
        score = chips.sync_score(tile, plan)
        if score < SYNC_THRESHOLD:
            continue
        render_id = chase(chips.votes(tile, plan), CHASE_BITS)
        if render_id is not None:
            return render_id, score
    return None

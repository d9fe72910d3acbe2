"""The perspective of a photo framed on the page, from the page's own lines: where its
vanishing line lies, found without any page edge (`render.forensic.framed` reads the mark).

A homography from the photo to the page is an affine map after a purely projective one,
x -> x / (1 + v . x) (x in the photo, centred, in units of its long side): `v` is the
photo's vanishing line, two numbers. The affine part (scale, rotation, aspect, shear) the
mark's own lattice shows once the projective part is undone: the autocorrelation of the
residual then has sharp peaks at the two tile vectors (measured on the untuned bench's
`filled` photos: 0.02-0.10 of the origin's height at the true `v`, gone 0.04 away from it).

1. The visible pattern's rows meet in a vanishing point (`line_field`), on every page: `v`
   lies on a line (a point p of the vanishing line satisfies v . p = -1).
2. The document's text lines give a second point where a page has enough text: `v` is then
   where the two lines cross (to about 0.04 on the bench's photos: a seed, not the answer;
   `text_seed`, which also tells a seed its windows cannot fix, a page of one text line).
3. Along the pattern's line, every `v` 0.02 apart (the peak's reach), within _SEEDED_REACH
   of that seed when there is one and it is not in doubt, is undone and scored by the
   residual's autocorrelation: the two highest peaks that make a tile lattice
   (`tile_lattice`); the best few are refined 0.005 apart across and along the line.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import line_field, sync, text_seed
from render.forensic.pattern_model import local_maxima, sub_pixel

Floats = npt.NDArray[np.float64]
_REACH = 0.45  # |v| tried at most: a tilt of 15 degrees seen at a focal length of 0.7 x the
# frame's diagonal (the bench's widest) is about 0.3
_STEP = 0.02  # along the pattern's line: the autocorrelation's peak is about 0.03 wide in v
_FINE = 0.005
_REFINED = 2  # the best coarse trials refined
# The text's seed's own neighbourhood: its error on the bench's photos (the coarse trials are
# _STEP apart, so two or three of them lie this near it).
_NEAR_SEED = 0.04
# Along the pattern's line either side of the text's seed, the only trials made when there is
# one: the 31 photos this reading named among the `filled` and `crop` leaks of
# `bench.leakmark_untuned` (seeds 41 and 47) were each read at a trial within 0.08 of the
# seed; the rest of the line (about 33 trials more, as many on an unmarked photo) named none.
# Not about a seed in doubt (`text_seed`): one at seed 67, of a page of one text line, lay
# 0.54 from its photo's `v`; the whole line tried, that photo is named at its best trial.
_SEEDED_REACH = 0.12
# A lattice this clear (the heights of its two peaks added, on the coarse copy) is the mark's,
# and shows a perspective without the text's lines: measured on the untuned bench's `filled`
# photos, 0.09-0.31 within 0.015 of the true v, at most 0.096 further than 0.05 from it.
_CLEAR = 0.11
_COARSE_SHARE = 2 / 3  # the coarse trials' copy, of the working copy's size
_MIN_TILT = 0.015  # |v| under this: no perspective to undo (the search reads such an image)
_MIN_LAG = 40  # px of the working copy: shorter lags are the letters and the text's lines
_PEAKS = 12
_HARMONIC = 0.3  # a lattice vector's second harmonic, at least this share of its peak
_SQUARE = 0.15  # the two tile vectors' lengths within this share of each other
_RIGHT = math.radians(15)  # and at right angles within this (aspect and shear leave them so)
# The tile's horizontal vector within this of the horizontal: a roll of 10 degrees, and what a
# tilt of 15 does to a direction near the frame's edges.
_TURN = math.radians(22)
# Given the pattern's rows in the flattened copy, the tile's horizontal vector lies 30 degrees
# from them (the served angle between them) to within what aspect and shear leave (under a
# degree at the trials nearest the camera's `v` on the bench's crops): a lattice of the text's
# lines, or of the letters, lies elsewhere. The peaks looked at to find one in that wedge.
_WEDGE = math.radians(3)
_WEDGE_PEAKS = 48
ROWS = math.radians(-30.0)  # the pattern's rows on a served page (`render.watermark.pattern`)
# The smaller copy's lattice is the trial's when its length is within this share of the
# trial's, or of one of these multiples (a lattice's harmonic is found as often as not).
_SAME_LATTICE = 0.04
_HARMONICS = (1 / 3, 1 / 2, 1.0, 2.0, 3.0)


class TileLattice(NamedTuple):
    """The mark's tile vectors in a flattened image (columns dx, dy; the first the nearer
    the horizontal, pointing right; the second down) and the lower of their peaks' heights."""
    across: tuple[float, float]
    down: tuple[float, float]
    height: float


class Flattened(NamedTuple):
    """A trial's `v`, its flattened image, the map from the image's pixels to the flat
    one's (3 x 3), the tile lattice it shows, if any, and whether the coarse copy showed that
    lattice there too (a refined trial's, `horizons`; else it is only a trial to scan)."""
    horizon: tuple[float, float]
    image: Image.Image
    matrix: Floats
    lattice: TileLattice | None
    coarse_shows: bool = True


class Expected(NamedTuple):
    """What the tile's lattice must look like in an image: the pattern's rows' vanishing
    point there (homogeneous, the image's pixels: the tile's horizontal vector lies ROWS from
    them) and the tile's shortest length (px)."""
    rows: Floats
    shortest: float


def rows_direction(matrix: Floats, size: tuple[int, int], rows: Floats) -> float:
    """The pattern's rows' direction (radians, mod pi) in an image of `size` that `matrix`
    maps the image where they meet at `rows` into: their vanishing point mapped there, seen
    from its centre."""
    point = matrix @ rows
    centre = (size[0] / 2, size[1] / 2)
    angle = math.atan2(point[1] - centre[1] * point[2], point[0] - centre[0] * point[2])
    return (angle + math.pi / 2) % math.pi - math.pi / 2  # a line's direction: mod 180


def centred(size: tuple[int, int]) -> Floats:
    """The map from an image's pixels to its centred coordinates in units of its long side."""
    long_side = float(max(size))
    return np.array([[1 / long_side, 0, -size[0] / 2 / long_side],
                     [0, 1 / long_side, -size[1] / 2 / long_side], [0, 0, 1]])


class Horizons(NamedTuple):
    """Where the pattern's rows meet in the image (homogeneous), the flattened copies worth
    reading, best lattice first, and whether the perspective is certain: the text's lines
    show it, or the best lattice is clear (_CLEAR). An uncertain one may be chance (a page
    raised in tone, its paper clipped, shows no mark's lattice): the decoder's other
    readings are then still tried."""
    rows: Floats
    trials: list[Flattened]
    certain: bool


class RowsLine(NamedTuple):
    """The line of `v` the pattern's rows allow: its point nearest 0 and its direction, the
    rows' vanishing point (homogeneous, in the image's pixels), the text's seed on it and
    whether that seed is in doubt along the line (`text_seed`: then the whole line is tried)."""
    nearest: Floats
    direction: Floats
    rows: Floats
    seed: Floats | None
    seed_doubtful: bool = False


def horizons(grey: Image.Image, unreduced: bool = False, shortest: float = _MIN_LAG,
             line: RowsLine | None = None) -> Horizons | None:
    """The flattened copies of `grey` worth reading: None when the pattern's rows meet
    nowhere or the page shows no perspective (|v| under _MIN_TILT: the search reads that).
    `unreduced`: `grey` is the photo at its own size, its noise not averaged (then the
    lattices its smaller copy shows are tried too, `_as_coarse_sees`). `shortest`: the
    tile's shortest length in `grey` (px) at the smallest scale the reader searches. `line`:
    `rows_line(grey)`, when the caller has it (it costs 0.15-0.3 s)."""
    line = line or rows_line(grey)
    seed = None if line is None or line.seed_doubtful else line.seed
    if line is None or (seed is not None and float(np.hypot(*seed)) < _MIN_TILT):
        return None  # no rows; or the text's lines and the rows agree: no perspective
    nearest, direction = line.nearest, line.direction
    span = math.sqrt(_REACH ** 2 - float(nearest @ nearest))
    steps = np.arange(-span, span + 1e-9, _STEP)
    # The coarse trials on a smaller copy (v is in units of the long side: the same there),
    # only those near the text's seed when the page's text gives one it fixes
    # (`_SEEDED_REACH`); a seed in doubt steers nothing.
    small = grey.resize((round(grey.width * _COARSE_SHARE), round(grey.height * _COARSE_SHARE)),
                        Image.Resampling.BOX)
    share = max(small.size) / max(grey.size)
    in_small = Expected(line.rows * np.array([share, share, 1.0]), shortest * share)
    if seed is not None:
        steps = steps[np.abs(steps - float((seed - nearest) @ direction)) <= _SEEDED_REACH]
    coarse = [flattened(small, nearest + step * direction, in_small) for step in steps]
    coarse = sorted((trial for trial in coarse if trial.lattice is not None), key=_height,
                    reverse=True)
    refined = []
    across = np.array([direction[1], -direction[0]])
    for trial in _worth_refining(coarse, seed):
        centre = np.array(trial.horizon)
        nearby = [flattened(grey, centre + a * direction + b * across,
                            Expected(line.rows, shortest))
                  for a, b in ((0, 0), (-_FINE, 0), (_FINE, 0), (0, -_FINE), (0, _FINE))]
        best = max(nearby, key=_height)
        refined.append(best._replace(coarse_shows=_same_lattice(best, trial, 1 / share)))
    refined.sort(key=_height, reverse=True)
    if not refined or refined[0].lattice is None or math.hypot(
            *refined[0].horizon) < _MIN_TILT:
        return None  # no lattice; or upright in all but a trace of tilt: the search's to read
    if unreduced:
        refined += _as_coarse_sees(small, refined, 1 / share, in_small)
    return Horizons(line.rows, refined,
                    line.seed is not None or _height(refined[0]) >= _CLEAR)


def _worth_refining(coarse: list[Flattened], seed: Floats | None) -> list[Flattened]:
    """The coarse trials to refine (`coarse`: best lattice first): the _REFINED best, the
    last of them given up for the best trial within _NEAR_SEED of the text's `seed` when none
    of them lies that near it. A chance lattice far along the pattern's line can outscore the
    tile's own near the seed (a crop whose seed lay 0.02 from the camera's `v`: the tile's
    lattice there read at sync 9.4, the two best trials, 0.09 and 0.2 away, read nothing);
    given up rather than added, so a photo that reads nothing costs what it did."""
    chosen = coarse[:_REFINED]
    if seed is None or any(_apart_from(trial, seed) <= _NEAR_SEED for trial in chosen):
        return chosen
    near = [trial for trial in coarse if _apart_from(trial, seed) <= _NEAR_SEED]
    return [*chosen[: _REFINED - 1], near[0]] if near else chosen


def _apart_from(trial: Flattened, seed: Floats) -> float:
    return float(np.hypot(trial.horizon[0] - seed[0], trial.horizon[1] - seed[1]))


def _same_lattice(trial: Flattened, seen: Flattened, ratio: float) -> bool:
    """Whether `seen`'s lattice (times `ratio`) is `trial`'s or a harmonic of it. 0.005 from
    its coarse trial a refined one kept a named photo's length (0.97-1.01, or a harmonic); an
    unmarked one's was 0.16-2.7 times it, chance's (untuned bench, seeds 41, 47)."""
    if trial.lattice is None or seen.lattice is None:
        return False
    lengths = math.hypot(*seen.lattice.across) * ratio / math.hypot(*trial.lattice.across)
    return any(abs(lengths / harmonic - 1) < _SAME_LATTICE for harmonic in _HARMONICS)


def _as_coarse_sees(small: Image.Image, refined: list[Flattened], ratio: float,
                    expected: Expected | None = None) -> list[Flattened]:
    """Each refined trial again, after them, with the lattice the `small` copy shows at its
    `v` (its vectors times `ratio`), where that is neither the trial's own lattice nor a
    harmonic of it. The box average of the smaller copy takes out a photo's noise, which in a
    small photo (its working copy not reduced) can hide the tile's peak: a 477 x 564 crop
    whose tile is 80 px showed a lattice of 191 px at the right `v`, its smaller copy the
    tile's. On photos at their own size only: on two unmarked crops reduced it cost 0.4 s each."""
    extra = []
    for trial in refined:
        small_trial = flattened(small, trial.horizon, expected)
        seen = small_trial.lattice
        if seen is None or trial.lattice is None or _same_lattice(trial, small_trial, ratio):
            continue
        across = np.array(seen.across) * ratio
        down = np.array(seen.down) * ratio
        extra.append(trial._replace(lattice=TileLattice(
            (float(across[0]), float(across[1])), (float(down[0]), float(down[1])),
            seen.height), coarse_shows=True))
    return extra


def rows_line(grey: Image.Image) -> RowsLine | None:
    """Where the pattern's rows put `v` (v . p = -1 for their vanishing point p), or None
    when they show no point within _REACH."""
    pattern, text = line_field.families(grey)
    rows = line_field.vanishing_point(
        line_field.directions(pattern, line_field.PATTERN_DIRECTIONS),
        line_field.PATTERN_CONTRAST)
    if rows is None:
        return None
    to_centred = centred(grey.size)
    along = to_centred @ rows
    norm = math.hypot(along[0], along[1])
    if norm < 1e-12:
        return None
    # v . (a, b) = -c: the line's point nearest the origin, and its direction.
    nearest = -along[2] * along[:2] / norm ** 2
    if float(np.hypot(*nearest)) > _REACH:
        return None
    seed = text_seed.text_seed(text, rows, to_centred, along, _REACH)
    return RowsLine(nearest, np.array([-along[1], along[0]]) / norm, rows,
                    None if seed is None else seed.point, seed is not None and seed.doubtful)


def _height(trial: Flattened) -> float:
    return trial.lattice.height if trial.lattice is not None else -1.0


def flattened(grey: Image.Image, horizon: Floats | tuple[float, float],
              expected: Expected | None = None) -> Flattened:
    """`grey` with the projective part `horizon` undone, and the tile lattice it shows (as
    `expected` has it, when given)."""
    v = (float(horizon[0]), float(horizon[1]))
    to_centred = centred(grey.size)
    projective = np.array([[1, 0, 0], [0, 1, 0], [v[0], v[1], 1]])
    matrix = np.linalg.inv(to_centred) @ projective @ to_centred
    width, height = grey.size
    corners = np.array([[0, 0, 1], [width, 0, 1], [width, height, 1], [0, height, 1]],
                       float) @ matrix.T
    corners = corners[:, :2] / corners[:, 2:]
    low, high = corners.min(axis=0), corners.max(axis=0)
    matrix = np.array([[1, 0, -low[0]], [0, 1, -low[1]], [0, 0, 1]]) @ matrix
    inverse = np.linalg.inv(matrix)
    inverse /= inverse[2, 2]
    size = (math.ceil(high[0] - low[0]), math.ceil(high[1] - low[1]))
    flat = grey.transform(size, Image.Transform.PERSPECTIVE,
                          tuple(float(c) for c in inverse.ravel()[:8]),
                          Image.Resampling.BILINEAR)
    if expected is None:
        return Flattened(v, flat, matrix, tile_lattice(flat))
    along = rows_direction(matrix, flat.size, expected.rows) - ROWS
    return Flattened(v, flat, matrix, tile_lattice(flat, along, expected.shortest))


def tile_lattice(flat: Image.Image, along: float | None = None, shortest: float = _MIN_LAG,
                 ) -> TileLattice | None:
    """The mark's tile lattice in `flat` (the projective part undone), or None: among the
    highest autocorrelation peaks of its residual, those whose second harmonic shows too (a
    lattice repeats; a page's text lines seldom repeat so exactly), each with the highest
    point where a tile's other vector can lie (as long, at right angles, within _SQUARE and
    _RIGHT: a dense text page keeps little of the vertical vector's peak, the text lines
    cutting the residual into rows); the pair whose two heights add up most. `along`: the
    direction (radians) the pattern's rows put the horizontal vector in (then only peaks
    within _WEDGE of it, or of its perpendicular, and at least `shortest` long, are
    candidates: a text page's line and letter repeats outrank the tile's peak elsewhere)."""
    acf = sync.autocorrelation(sync.residual(flat, 2))
    longest = min(flat.size) / 2.5
    best: TileLattice | None = None
    peaks = local_maxima(acf, max(_MIN_LAG, math.floor(shortest)),
                         _PEAKS if along is None else _WEDGE_PEAKS)
    if along is not None:
        peaks = [peak for peak in peaks if _in_wedge(peak[0], peak[1], along)][:_PEAKS]
    for x, y, top in peaks:
        if math.hypot(x, y) > longest or (best is not None and 2 * top <= best.height):
            continue
        u = _refined(acf, np.array(sub_pixel(acf, x, y)), top)
        if u is None:
            continue
        other = _other_vector(acf, u)
        if other is None:
            continue
        w, height = other
        lattice = _oriented(u, w, top + height)
        turn = math.atan2(lattice.across[1], lattice.across[0])
        if abs(turn) > _TURN or (along is not None and abs(_apart_by(turn, along)) > _WEDGE):
            continue  # the pattern's rows repeat along their own direction, -30 degrees
        if best is None or lattice.height > best.height:
            best = lattice
    return best


def _apart_by(angle: float, other: float) -> float:
    """`angle` less `other` as lines' directions (radians, within +-pi/2)."""
    return (angle - other + math.pi / 2) % math.pi - math.pi / 2


def _in_wedge(x: float, y: float, along: float) -> bool:
    """Whether the lag (x, y) lies within _WEDGE of `along` or of its perpendicular."""
    apart = abs(_apart_by(math.atan2(y, x), along))
    return min(apart, math.pi / 2 - apart) <= _WEDGE


def _refined(acf: npt.NDArray[np.float32], u: Floats, top: float) -> Floats | None:
    """`u` fitted through its peak and its second harmonic's (least squares through the
    origin), or None when the harmonic, inside the plane, shows no peak of half its height."""
    shape = acf.shape
    if 2 * abs(u[0]) >= shape[1] / 2 - 3 or 2 * abs(u[1]) >= shape[0] / 2 - 3:
        return u  # no room for the harmonic: the peak alone
    x2, y2, value = sync.peak(acf, (2 * float(u[0]), 2 * float(u[1])), 2)
    if value < _HARMONIC * top:
        return None
    fitted: Floats = (u + 2 * np.array([x2, y2])) / 5
    return fitted


def _other_vector(acf: npt.NDArray[np.float32], u: Floats) -> tuple[Floats, float] | None:
    """The highest point of `acf` where the tile's other vector can lie given `u`, and its
    height; None when that is no local maximum (a slope out of the window)."""
    length = float(np.hypot(*u))
    turned = np.array([-u[1], u[0]])
    reach = math.ceil(length * max(_SQUARE, math.sin(_RIGHT))) + 1
    xs = np.arange(math.floor(turned[0]) - reach, math.ceil(turned[0]) + reach + 1)
    ys = np.arange(math.floor(turned[1]) - reach, math.ceil(turned[1]) + reach + 1)
    window = sync.wrapped_window(acf, xs, ys).astype(np.float64)
    lengths = np.hypot(xs[None, :], ys[:, None])
    cosine = (xs[None, :] * turned[0] + ys[:, None] * turned[1]) / np.maximum(
        lengths * length, 1e-9)
    window[(np.abs(lengths - length) > _SQUARE * length) | (cosine < math.cos(_RIGHT))] = -np.inf
    iy, ix = np.unravel_index(int(np.argmax(window)), window.shape)
    if not np.isfinite(window[iy, ix]) or iy in (0, len(ys) - 1) or ix in (0, len(xs) - 1):
        return None
    x, y, value = sync.peak(acf, (float(xs[ix]), float(ys[iy])), 1)
    refined = _refined(acf, np.array([x, y]), value)
    return (np.array([x, y]) if refined is None else refined), value


def _oriented(u: Floats, w: Floats, height: float) -> TileLattice:
    """The pair as a tile lattice: the vector nearer the horizontal across, pointing right,
    the other down."""
    across, down = (u, w) if abs(u[0]) >= abs(w[0]) else (w, u)
    across = across if across[0] > 0 else -across
    down = down if down[1] > 0 else -down
    return TileLattice((float(across[0]), float(across[1])), (float(down[0]), float(down[1])),
                       height)

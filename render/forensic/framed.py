"""Reading a photo framed on the page: no page edge in the frame, so no corners to rectify
from (`render.forensic.photo`); the perspective comes from the page's own lines instead
(`render.forensic.perspective`), and the rest of the map from the mark's tile lattice and
the pattern's rows.

1. A working copy, its long side about _WORK_SIDE px (an area average: the sensor's noise
   averaged, the chips, 10-30 px in such a photo, left at 5-11 px).
2. Its projective part undone at the few vanishing lines the pattern's rows and the
   autocorrelation agree on (`perspective.horizons`). Each flattened copy shows the tile's
   horizontal vector (`perspective.tile_lattice`: its peak and second harmonic are clear on
   every page measured), which gives the scale and the rotation. The tile's other vector is
   not as clear (on a dense text page the text's lines cut the residual into rows), and
   foreshortening leaves an aspect (up to about 5 %) and a shear: given the aspect, the shear
   is the one that puts the pattern's rows at their served 30 degrees. So the aspects within
   _ASPECT_REACH are folded coarsely (`coarse`, as the photo reading does), each at its shear
   and those _SHEAR_STEP either side; the best few folded finely and refined. A refined
   trial's lattice is folded only when the coarse copy showed it (or a harmonic) at that
   trial too: else it is chance's (`perspective.Flattened.coarse_shows`).
3. The checks of every other reading (`scan.first_decoded`): sync >= 6 standard deviations,
   then the CRC with at most 3 flips among the 6 least reliable bits; a fold whose sync passes
   and whose CRC fails is folded again from the weighted residual.
4. When the best trial's lattice reads nothing, the tile's length found by folds along the
   direction the pattern's rows give it (`_scanned`): the autocorrelation can show a
   harmonic's or the text's lattice and none at the tile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import coarse, perspective, scan, sync
from render.forensic.layout import CHIP, TILE, Layout
from render.forensic.pattern_model import Points

Floats = npt.NDArray[np.float64]
_WORK_SIDE = 900
_ASPECT_REACH = 0.1  # ln(aspect) either side of 1
_ASPECT_STEP = 0.005
_SHEARS = (-0.01, -0.005, 0.0, 0.005, 0.01)  # about the rows' shear (a drift of 2 px a tile)
_CANDIDATES = 4
_WORTH_REFINING = 4.0
_FINE = 4  # fine trials either side in aspect and shear, a quarter step apart
_COARSE_POINTS = 30_000
_SCAN_SCALE = 0.5  # the residual's radius for the scan of lengths: a chip's half at 0.5
_SAME_LENGTH = 0.02


class Reading(NamedTuple):
    """What `read_framed` found: (render id, sync score) or None, and whether the photo
    showed a perspective (the other readings model none: they need not try it)."""
    found: tuple[int, float] | None
    tilted: bool


class Lines(NamedTuple):
    """A photo's working copy and where the pattern's rows and the text's lines put its
    vanishing line there (`perspective.rows_line`; None: the rows meet nowhere)."""
    work: Image.Image
    line: perspective.RowsLine | None


def lines(grey: Image.Image) -> Lines:
    """The lines of `grey` (a photo's luminance) the framed reading starts from."""
    work = _working_copy(grey)
    return Lines(work, perspective.rows_line(work))


def text_tilt(seen: Lines) -> float | None:
    """|v| where the text's lines cross the pattern's line of vanishing lines (the text's
    seed, `perspective`: within about 0.04 of the camera's), or None when the page shows no
    such seed."""
    seed = None if seen.line is None else seen.line.seed
    return None if seed is None else float(np.hypot(*seed))


def read_framed(grey: Image.Image, plan: Layout, seen_lines: Lines | None = None) -> Reading:
    """The mark in `grey` (a photo's luminance) read as a photo of a page that fills the
    frame, when the page's lines show a perspective. `seen_lines`: `lines(grey)`, when the
    caller has them."""
    work, line = seen_lines or lines(grey)
    if line is None:
        return Reading(None, False)  # the pattern's rows meet nowhere (`perspective`)
    # The tile at the smallest scale the search reads, in the working copy's pixels.
    shortest = TILE * sync.MIN_SCALE * work.width / grey.width
    seen = perspective.horizons(work, work.size == grey.size, shortest, line)
    if seen is None:
        return Reading(None, False)
    for number, trial in enumerate(seen.trials):
        rows = perspective.rows_direction(trial.matrix, trial.image.size, seen.rows)
        for across in _acrosses(trial, rows, shortest if number == 0 else None, plan):
            found = _read(trial.image, across, rows, plan)
            if found is not None:
                return Reading(found, True)
    return Reading(None, seen.certain)


def _acrosses(trial: perspective.Flattened, rows: float, shortest: float | None,
              plan: Layout) -> Iterator[Floats]:
    """The tile's horizontal vectors to read `trial` at, as they are asked for: its
    lattice's, when the coarse copy showed it there too (`perspective.Flattened`: else it is
    chance's), then (given the tile's `shortest` length: the best trial only) the one a scan
    of folds finds (`_scanned`): the lattice may be a harmonic's or the text's."""
    tried = [] if trial.lattice is None or not trial.coarse_shows else [
        np.array(trial.lattice.across)]
    yield from tried
    if shortest is not None:
        yield from _scanned(trial.image, rows, shortest, tried, plan)


def _scanned(flat: Image.Image, rows: float, shortest: float, tried: list[Floats],
             plan: Layout) -> list[Floats]:
    """The tile's horizontal vector in `flat` found by folds, where the autocorrelation may
    show none: along the direction the pattern's `rows` give it (ROWS from them, aspect and
    shear taken as none), every length from `shortest` folded coarsely (`coarse.scores`, as
    the scan tries scales); the best one, unless it scores under `scan.SYNC_THRESHOLD` or is a
    vector of `tried` (within _SAME_LENGTH). Measured on the bench's crops: the missed one's
    tile scored 6.6 at its best trial; the best length of unmarked photos 4.7-5.6 (under the
    threshold, so they pay the scan, about 0.3 s of CPU, and no read)."""
    turn = rows - perspective.ROWS
    longest = min(shortest * sync.MAX_SCALE / sync.MIN_SCALE, min(flat.size) / 2.5)
    if longest <= shortest:
        return []
    scales = np.exp(np.arange(math.log(shortest / TILE), math.log(longest / TILE), scan.STEP))
    sample = scan.thinned(_points(flat, _SCAN_SCALE), _COARSE_POINTS)
    values = coarse.scores(sample, np.stack([scales, scales], axis=1), turn, plan)
    best = int(np.argmax(values))
    length = float(scales[best]) * TILE
    if values[best] < scan.SYNC_THRESHOLD or any(
            abs(float(np.hypot(*across)) / length - 1) < _SAME_LENGTH for across in tried):
        return []
    return [np.array([length * math.cos(turn), length * math.sin(turn)])]


def _working_copy(grey: Image.Image) -> Image.Image:
    factor = _WORK_SIDE / max(grey.size)
    if factor >= 1:
        return grey
    return grey.resize((round(grey.width * factor), round(grey.height * factor)),
                       Image.Resampling.BOX)


def _read(flat: Image.Image, across: Floats, rows: float, plan: Layout,
          ) -> tuple[int, float] | None:
    """The mark folded along the tile whose horizontal vector is `across` in `flat`, at the
    aspects and shears the pattern's `rows` allow, the best few decoded. A fold whose sync
    chips pass but whose payload fails its CRC is folded again from the weighted residual
    (`sync.weighted_residual`: a WebP save keeps the mark beside the text, where the
    silenced residual is 0), every pixel of it."""
    length = float(np.hypot(*across))
    turn = math.atan2(across[1], across[0])
    scale = length / 192.0
    points = _upright(_points(flat, scale), turn)
    weighted: Points | None = None
    for aspect, shear in _candidates(points, scale, rows - turn, plan):
        folded = _folded(points, aspect, shear, scale)
        # The sync score first: `first_decoded` passes no fold under it, so a fold of chance
        # (an unmarked photo's, every one) is aligned and scored once, not twice.
        if scan.fold_score(folded, plan) < scan.SYNC_THRESHOLD:
            continue
        found = scan.first_decoded([folded], plan)
        if found is not None:
            return found
        if weighted is None:
            weighted = _upright(_points(flat, scale, sync.weighted_residual), turn)
        found = scan.first_decoded([_folded(weighted, aspect, shear, scale)], plan)
        if found is not None:
            return found
    return None


def _points(flat: Image.Image, scale: float,
            residual: Callable[[Image.Image, float], sync.Floats] = sync.residual) -> Points:
    """The residual's non-zero pixels (rows, columns, values), about the image's centre."""
    detail = residual(flat, max(1.0, CHIP * scale / 2))
    ys, xs = np.nonzero(detail)
    centred: Points = (ys.astype(np.float64) - flat.height / 2.0,
                       xs.astype(np.float64) - flat.width / 2.0,
                       detail[ys, xs].astype(np.float64))
    return centred


def _upright(points: Points, turn: float) -> Points:
    """The points turned by -`turn`: the tile's horizontal vector then points along x."""
    ys, xs, values = points
    cos, sin = math.cos(turn), math.sin(turn)
    turned: Points = (cos * ys - sin * xs, cos * xs + sin * ys, values)
    return turned


def _sheared(points: Points, shear: float, aspect: float) -> Points:
    """Upright points as the mark's frame sees them at a scale of 1 across: x less `shear`
    times y, y over `aspect` (a fold at the across scale then reads the tile)."""
    ys, xs, values = points
    return ys / aspect, xs - shear * ys, values


def _shear_for(aspect: float, rows: float) -> float:
    """The shear that, with `aspect`, turns the served rows' direction into `rows` (both in
    the upright frame): (cos r, a sin r) sheared by s along x lies along `rows`."""
    sin, cos = math.sin(perspective.ROWS), math.cos(perspective.ROWS)
    # (cos + s a sin, a sin) is parallel to (cos rows, sin rows).
    return (aspect * sin * math.cos(rows) / math.sin(rows) - cos) / (aspect * sin)


def _candidates(points: Points, scale: float, rows: float, plan: Layout,
                ) -> list[tuple[float, float]]:
    """(aspect, shear) pairs worth decoding, best first: every aspect at its rows' shear and
    _SHEARS about it folded coarsely, the best few probed and refined."""
    sample = scan.thinned(points, _COARSE_POINTS)
    aspects = np.exp(np.arange(-_ASPECT_REACH, _ASPECT_REACH + 1e-9, _ASPECT_STEP))
    # Each shear is a fold of its own; the aspect is the vertical scale.
    shears = np.array([[_shear_for(aspect, rows) + offset for aspect in aspects.tolist()]
                       for offset in _SHEARS])
    values = coarse.sheared_scores(sample, scale, aspects, shears, plan)
    scored = sorted(zip(values.tolist(), np.tile(aspects, len(_SHEARS)).tolist(),
                        shears.ravel().tolist(), strict=True), reverse=True)
    found: list[tuple[float, float, float]] = []
    tried: list[tuple[float, float]] = []
    dense = scan.thinned(points, scan.MAX_POINTS)
    for value, aspect, shear in scored:
        if value < _WORTH_REFINING or len(tried) == _CANDIDATES:
            break
        if any(abs(math.log(aspect / a)) < 2 * _ASPECT_STEP and abs(shear - s) < 0.008
               for a, s in tried):
            continue
        tried.append((aspect, shear))
        probe = scan.fold_score(_folded(dense, aspect, shear, scale), plan)
        if probe < scan.PROBE:
            continue
        found.append((probe, aspect, shear))
        for i in range(-_FINE, _FINE + 1):
            for j in (-1, 0, 1):
                if i or j:
                    fine_aspect = aspect * math.exp(i * _ASPECT_STEP / _FINE)
                    fine_shear = shear + j * 0.0025
                    found.append((scan.fold_score(_folded(dense, fine_aspect, fine_shear,
                                                          scale), plan),
                                  fine_aspect, fine_shear))
    found.sort(reverse=True)
    return [(aspect, shear) for _, aspect, shear in found[: 2 * _CANDIDATES]]


def _folded(points: Points, aspect: float, shear: float, scale: float) -> npt.NDArray[np.float32]:
    """The upright `points` folded at `scale` across, `aspect` and `shear` undone."""
    return scan.fine_fold(_sheared(points, shear, aspect), scale, 0.0)

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
   and those _SHEAR_STEP either side; the best few folded finely and refined.
3. The checks of every other reading (`scan.first_decoded`): sync >= 6 standard deviations,
   then the CRC with at most 3 flips among the 6 least reliable bits.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import coarse, perspective, scan, sync
from render.forensic.layout import CHIP, Layout
from render.forensic.pattern_model import Points

Floats = npt.NDArray[np.float64]
_WORK_SIDE = 900
_ROWS = math.radians(-30.0)  # the pattern's rows on a served page (`render.watermark.pattern`)
_ASPECT_REACH = 0.1  # ln(aspect) either side of 1
_ASPECT_STEP = 0.005
_SHEARS = (-0.01, -0.005, 0.0, 0.005, 0.01)  # about the rows' shear (a drift of 2 px a tile)
_CANDIDATES = 4
_WORTH_REFINING = 4.0
_FINE = 4  # fine trials either side in aspect and shear, a quarter step apart
_COARSE_POINTS = 30_000


class Reading(NamedTuple):
    """What `read_framed` found: (render id, sync score) or None, and whether the photo
    showed a perspective (the other readings model none: they need not try it)."""
    found: tuple[int, float] | None
    tilted: bool


def read_framed(grey: Image.Image, plan: Layout) -> Reading:
    """The mark in `grey` (a photo's luminance) read as a photo of a page that fills the
    frame, when the page's lines show a perspective."""
    work = _working_copy(grey)
    seen = perspective.horizons(work, unreduced=work.size == grey.size)
    if seen is None:
        return Reading(None, False)
    for trial in seen.trials:
        if trial.lattice is None:
            continue
        rows = _rows_direction(trial, seen.rows)
        found = _read(trial.image, np.array(trial.lattice.across), rows, plan)
        if found is not None:
            return Reading(found, True)
    return Reading(None, seen.certain)


def _working_copy(grey: Image.Image) -> Image.Image:
    factor = _WORK_SIDE / max(grey.size)
    if factor >= 1:
        return grey
    return grey.resize((round(grey.width * factor), round(grey.height * factor)),
                       Image.Resampling.BOX)


def _rows_direction(trial: perspective.Flattened, rows: Floats) -> float:
    """The pattern's rows' direction (radians) in the flattened image: their vanishing
    point mapped there, seen from its centre."""
    point = trial.matrix @ rows
    centre = (trial.image.width / 2, trial.image.height / 2)
    angle = math.atan2(point[1] - centre[1] * point[2], point[0] - centre[0] * point[2])
    return (angle + math.pi / 2) % math.pi - math.pi / 2  # a line's direction: mod 180


def _read(flat: Image.Image, across: Floats, rows: float, plan: Layout,
          ) -> tuple[int, float] | None:
    """The mark folded along the tile whose horizontal vector is `across` in `flat`, at the
    aspects and shears the pattern's `rows` allow, the best few decoded."""
    length = float(np.hypot(*across))
    turn = math.atan2(across[1], across[0])
    scale = length / 192.0
    points = _upright(_points(flat, scale), turn)
    return scan.first_decoded((_folded(points, aspect, shear, scale) for aspect, shear
                               in _candidates(points, scale, rows - turn, plan)), plan)


def _points(flat: Image.Image, scale: float) -> Points:
    """The residual's non-zero pixels (rows, columns, values), about the image's centre."""
    detail = sync.residual(flat, max(1.0, CHIP * scale / 2))
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
    sin, cos = math.sin(_ROWS), math.cos(_ROWS)
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

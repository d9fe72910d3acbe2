"""Which way a photo's lines run across it, and where they meet: the evidence for its
perspective when no page edge is in the frame (`render.forensic.perspective`).

A page carries two families of straight lines: the visible pattern's rows of text (a served
page's pattern runs at 30 degrees up to the right, `render.watermark.pattern`), on every page,
and the document's own text lines, on most. Each family's lines are parallel on the page, so in
a photo they meet in one vanishing point. Both are read the same way:

1. the family's pixels: the pattern's letters are grey (60-90 % of the paper around them, the
   document's strokes and their edges left out), the document's strokes dark (under 55 %);
2. the image cut into windows a quarter of its long side, overlapping by half; in each, the
   direction along which the family's pixels pile up in the fewest, fullest rows (the energy
   of their projection profile, the classic skew estimate), among the directions the family
   can take (the pattern's rows -55..-5 degrees, the text's -22..22: a roll of 10 degrees,
   a tilt of 15 and the pattern's 30 between them), to 0.05 degree;
3. the point the windows' lines meet (homogeneous least squares, windows far off it dropped
   and the fit made again).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter

Floats = npt.NDArray[np.float64]
PATTERN_DIRECTIONS = (-55.0, -5.0)  # degrees, y down: the pattern's rows, up to the right
TEXT_DIRECTIONS = (-22.0, 22.0)
_DARK = 0.55  # of the local paper: the document's strokes
_GREY = (0.6, 0.9)  # of the local paper: the pattern's letters (196 on 252 served: 0.78)
_STROKE_REACH = 3  # px: the dark strokes' anti-aliased edges, left out of the grey
_PAPER_REDUCTION = 4  # the local paper: the lightest pixel within this many px, about
_WINDOWS = 4  # a window's side is the long side over this
WINDOW_SIDE = 1 / _WINDOWS  # of the image's long side
_MIN_PIXELS = 300  # a window with fewer of the family's pixels has no direction to read
_MOST_PIXELS = 2500  # thinned to this many (a fixed subset: the reading is repeatable)
_COARSE_STEP = 0.5  # degrees
_FINE_STEP = 0.05
# A window's direction is kept when its profile's energy there is this many times the median
# over the directions tried (measured on the untuned bench's `filled` photos: the pattern's
# windows 1.3-4, text windows 2-9; a window of a photograph or of blank paper about 1).
PATTERN_CONTRAST = 1.3
TEXT_CONTRAST = 2.0
_MIN_WINDOWS = 4
_AGREE = math.radians(0.3)  # a window this far off the common point is always kept
_OUTLIER = 2.5  # times the median miss: a window further off is dropped
# The fit's second smallest singular value under this share of its largest: the windows'
# lines are one line (in units of their spread, distinct lines give 0.1 and more).
_ONE_LINE = 0.03


class Direction(NamedTuple):
    """A window's centre (x, y, px), the direction its lines run (radians, y down) and how
    clearly (the profile's energy there over its median)."""
    x: float
    y: float
    angle: float
    contrast: float


def families(grey: Image.Image) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """The pattern's letters and the document's strokes, as masks of `grey`."""
    # The lightest pixel near each, on a copy a quarter the size (a rank filter at full size
    # costs ten times more), smoothed and brought back.
    small = grey.reduce(_PAPER_REDUCTION).filter(ImageFilter.MaxFilter(3))
    paper = small.resize(grey.size, Image.Resampling.BILINEAR)
    share = np.asarray(grey, np.float32) / np.maximum(np.asarray(paper, np.float32), 1.0)
    dark = share < _DARK
    # Grown by _STROKE_REACH px: a box blur of the mask is non-zero exactly there.
    strokes = Image.fromarray(dark.astype(np.uint8) * 255).filter(
        ImageFilter.BoxBlur(_STROKE_REACH))
    pattern = (share > _GREY[0]) & (share < _GREY[1]) & (np.asarray(strokes) == 0)
    return pattern, dark


def directions(mask: npt.NDArray[np.bool_], span: tuple[float, float]) -> list[Direction]:
    """Each window's direction of `mask`'s lines, within `span` (degrees)."""
    height, width = mask.shape
    side = max(height, width) // _WINDOWS
    found = []
    for top in range(0, height - side + 1, side // 2):
        for left in range(0, width - side + 1, side // 2):
            ys, xs = np.nonzero(mask[top:top + side, left:left + side])
            if len(ys) < _MIN_PIXELS:
                continue
            step = len(ys) // _MOST_PIXELS + 1
            angle, contrast = _direction(ys[::step].astype(np.float64),
                                         xs[::step].astype(np.float64), span)
            found.append(Direction(left + side / 2, top + side / 2, angle, contrast))
    return found


def _direction(ys: Floats, xs: Floats, span: tuple[float, float]) -> tuple[float, float]:
    """The direction (radians) along which the points pile up in the fullest rows, and the
    profile's energy there over its median across `span`."""
    coarse = np.radians(np.arange(span[0], span[1] + 1e-9, _COARSE_STEP))
    energy = _energies(ys, xs, coarse)
    best = int(np.argmax(energy))
    fine = coarse[best] + np.radians(np.arange(-_COARSE_STEP, _COARSE_STEP + 1e-9, _FINE_STEP))
    fine_energy = _energies(ys, xs, fine)
    return float(fine[int(np.argmax(fine_energy))]), float(energy[best] / np.median(energy))


def _energies(ys: Floats, xs: Floats, angles: Floats) -> Floats:
    """Per direction, the sum of squares of the points' profile across it (1-px rows)."""
    rows = ys[None, :] * np.cos(angles)[:, None]
    rows -= xs[None, :] * np.sin(angles)[:, None]
    rows -= rows.min()
    index = np.rint(rows, out=rows).astype(np.int64)
    length = int(index.max()) + 1
    index += np.arange(len(angles))[:, None] * length
    counts = np.bincount(index.ravel(), minlength=len(angles) * length)
    # Squared and summed as integers (under 2^53: exact in any order), then as floats: the
    # same energies as floats squared and summed, without the float copy.
    counts *= counts
    energy: Floats = counts.reshape(len(angles), length).sum(axis=1).astype(np.float64)
    return energy


class Fit(NamedTuple):
    """A family's vanishing point (homogeneous, x, y, w) and the windows whose lines meet
    there (the outliers dropped)."""
    point: Floats
    used: list[Direction]


def vanishing_point(found: list[Direction], contrast: float) -> Floats | None:
    """The homogeneous point (x, y, w) the lines of the windows at least `contrast` clear
    meet in (w = 0: parallel lines, a point at infinity), or None with too few of them or
    when they are one line seen through many windows (a page whose only dark line is a
    rule: any point along it would do)."""
    fit = vanishing_fit(found, contrast)
    return None if fit is None else fit.point


def vanishing_fit(found: list[Direction], contrast: float) -> Fit | None:
    """`vanishing_point`, with the windows it agrees with."""
    kept = [direction for direction in found if direction.contrast >= contrast]
    if len(kept) < _MIN_WINDOWS:
        return None
    # In units of the windows' spread about their mean: the fit's singular values compare.
    centre = np.mean([(d.x, d.y) for d in kept], axis=0)
    unit = max(1.0, float(np.max(np.abs([(d.x, d.y) for d in kept] - centre))))
    lines = np.array([_line(d._replace(x=(d.x - centre[0]) / unit,
                                       y=(d.y - centre[1]) / unit)) for d in kept])
    using = np.ones(len(kept), dtype=bool)
    point: Floats | None = None
    for _ in range(4):
        if using.sum() < _MIN_WINDOWS:
            return None
        values, vectors = np.linalg.svd(lines[using])[1:]
        if values[-2] < _ONE_LINE * values[0]:
            return None
        point = vectors[-1]
        misses = np.array([_miss(direction, point, centre, unit) for direction in kept])
        using = misses <= max(_AGREE, _OUTLIER * float(np.median(misses)))
    assert point is not None
    back = np.array([[unit, 0, centre[0]], [0, unit, centre[1]], [0, 0, 1]])
    found_point: Floats = back @ point
    return Fit(found_point, [direction for direction, agrees in zip(kept, using, strict=True)
                             if agrees])


def _line(direction: Direction) -> Floats:
    """The homogeneous line through the window's centre along its direction, weighted by the
    square root of its contrast."""
    sin, cos = math.sin(direction.angle), math.cos(direction.angle)
    line = np.array([-sin, cos, sin * direction.x - cos * direction.y])
    weighted: Floats = line * math.sqrt(direction.contrast)
    return weighted


def _miss(direction: Direction, point: Floats, centre: Floats, unit: float) -> float:
    """The angle between a window's direction and the direction from it to `point` (in the
    units about `centre` the fit used)."""
    x, y = (direction.x - centre[0]) / unit, (direction.y - centre[1]) / unit
    towards = math.atan2(point[1] - y * point[2], point[0] - x * point[2])
    return abs((towards - direction.angle + math.pi / 2) % math.pi - math.pi / 2)

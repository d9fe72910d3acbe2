"""A photographed page made flat again: find the page's quadrilateral, undo the perspective.

A phone photo of a screen shows the page as a bright quadrilateral on a darker surround (the
viewer's background, the bezel, the room). The decoder folds tiles under one scale and one
rotation, which a perspective breaks: over 20 degrees of tilt the scale changes by 10-20 %
across the page. So, on a copy reduced to about 1000 px (cheap):

1. the page is the pixels brighter than the midpoint between the image's dark and paper levels;
   its outline, row by row and column by column, is the first crossing of that midpoint from
   outside, interpolated between pixels;
2. each edge is a least-squares line through the crossings of the middle 60 % of its rows or
   columns (the rest may belong to the neighbouring edges), outliers dropped twice;
3. the corners are the lines' intersections, scaled back to the photo's pixels.

The photo is then reduced by a whole factor (an area average: sensor noise and what is left
of the screen's pixel grid averaged, not aliased) to about the width asked for, and warped onto
a rectangle whose sides are the quadrilateral's mean edge lengths. The aspect this gives is off
by up to about 5 % (foreshortening); `render.forensic.photo` searches it.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter

_WORK_SIDE = 1000  # px: the outline is found on a copy this large
_MIN_CONTRAST = 60  # grey levels between paper and surround: less is not a page on a screen
_MIN_AREA = 0.25  # of the frame: a smaller bright region is not a page shown large
# ...but may be a page photographed on a desk from further away (`render.forensic.photo`, which
# asks for it only where its edges are seen against a darker surround): the untuned bench's
# `margin` family puts the page on 45-85 % of the frame's width, 24 % of its area and less.
# The paper's level is the image's 90th percentile, so the page must cover more than a tenth.
SMALL_PAGE_AREA = 0.12
_MIN_SKEW = 0.01  # corners this near a similarity of a rectangle need no rectifying
_MIDDLE = (0.2, 0.8)  # the share of each edge's span whose crossings fit the line
# An outline whose every corner lies this near the frame's own (of its long side) is the
# frame's border, not a page's edges: the paper reaches every side of the image, and the
# edges were fitted to the few rows and columns whose border pixels are darker (a `filled`
# photo of `bench.leakmark_untuned`, seed 73: 0.006 of its long side; docs/leak-tracing-records.md,
# "A page whose outline is the frame").
_FRAME_REACH = 0.02

Floats = npt.NDArray[np.float64]
Corners = list[tuple[float, float]]  # top-left, top-right, bottom-right, bottom-left


def page_corners(grey: Image.Image, least_area: float = _MIN_AREA) -> Corners | None:
    """The page's four corners in `grey`'s pixels, or None when no bright quadrilateral
    covering `least_area` of the image or more stands out from a darker surround."""
    factor = max(1, math.ceil(max(grey.size) / _WORK_SIDE))
    small = grey.reduce(factor).filter(ImageFilter.BoxBlur(1))
    values = np.asarray(small, dtype=np.float64)
    dark, paper = np.percentile(values, 5), np.percentile(values, 90)
    if paper - dark < _MIN_CONTRAST:
        return None
    middle = (dark + paper) / 2
    bright = values > middle
    if bright.mean() < least_area:
        return None
    edges = [_edge_line(values, bright, middle, side) for side in range(4)]
    if any(edge is None for edge in edges):
        return None
    lines = [edge for edge in edges if edge is not None]
    corners = []
    for first, second in ((0, 3), (0, 1), (2, 1), (2, 3)):  # top/left, top/right, ...
        point = _intersection(lines[first], lines[second])
        if point is None:
            return None
        corners.append(((point[0] + 0.5) * factor - 0.5, (point[1] + 0.5) * factor - 0.5))
    return corners if _plausible(corners, grey.size, least_area) else None


def _edge_line(values: Floats, bright: npt.NDArray[np.bool_], middle: float,
               side: int) -> tuple[float, float, float] | None:
    """The line a x + b y = c through one edge's crossings: side 0 top, 1 right, 2 bottom,
    3 left, each scanned from outside inwards."""
    turned, mask = _from_outside(values, side), _from_outside(bright, side)
    columns = np.nonzero(mask.any(axis=0))[0]
    if len(columns) < 10:
        return None
    low, high = np.percentile(columns, [100 * _MIDDLE[0], 100 * _MIDDLE[1]])
    first = np.argmax(mask, axis=0)
    along, across = [], []
    for x in range(int(low), int(high) + 1):
        y = int(first[x])
        if not mask[y, x] or y == 0:
            continue  # no page in this column, or it touches the border: no edge seen
        above, below = turned[y - 1, x], turned[y, x]
        share = (middle - above) / (below - above) if below != above else 0.5
        along.append(x)
        across.append(y - 1 + share)
    if len(along) < 10:
        return None
    x_fit, y_fit = np.array(along, float), np.array(across, float)
    for _ in range(3):
        slope, intercept = np.polyfit(x_fit, y_fit, 1)
        misfit = np.abs(y_fit - (slope * x_fit + intercept))
        keep = misfit <= max(1.0, 3 * float(np.median(misfit)))
        x_fit, y_fit = x_fit[keep], y_fit[keep]
        if len(x_fit) < 10:
            return None
    ends = [(t, float(slope * t + intercept)) for t in (0.0, 1000.0)]
    (x1, y1), (x2, y2) = (_to_image(point, side, values.shape) for point in ends)
    a, b = y2 - y1, x1 - x2
    return a, b, a * x1 + b * y1


def _from_outside(array: npt.NDArray[np.generic], side: int) -> npt.NDArray[np.generic]:
    """A view of `array` in which going down a column goes from outside inwards across the
    edge `side` (0 top, 1 right, 2 bottom, 3 left)."""
    return (array, array.T[::-1], array[::-1], array.T)[side]


def _to_image(point: tuple[float, float], side: int, shape: tuple[int, ...],
              ) -> tuple[float, float]:
    """A (column, row) point of `_from_outside(..., side)` as (x, y) in the image."""
    along, across = point
    height, width = shape[0], shape[1]
    return ((along, across), (width - 1 - across, along), (along, height - 1 - across),
            (across, along))[side]


def _intersection(first: tuple[float, float, float], second: tuple[float, float, float],
                  ) -> tuple[float, float] | None:
    a1, b1, c1 = first
    a2, b2, c2 = second
    det = a1 * b2 - a2 * b1
    if abs(det) < 1e-9:
        return None
    return (c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det


def _plausible(corners: Corners, size: tuple[int, int], least_area: float) -> bool:
    """A convex quadrilateral within the image (a little beyond allowed) covering a good
    share of it."""
    points = np.array(corners)
    if (points < -0.05 * np.array(size)).any() or (points > 1.05 * np.array(size)).any():
        return False
    turns = []
    for k in range(4):
        a, b, c = points[k], points[(k + 1) % 4], points[(k + 2) % 4]
        (ux, uy), (vx, vy) = b - a, c - b
        turns.append(float(ux * vy - uy * vx))
    if not (all(t > 0 for t in turns) or all(t < 0 for t in turns)):
        return False
    area = 0.5 * abs(float(np.dot(points[:, 0], np.roll(points[:, 1], 1))
                           - np.dot(points[:, 1], np.roll(points[:, 0], 1))))
    return area >= least_area * size[0] * size[1]


def needs_rectifying(corners: Corners) -> bool:
    """Whether the quadrilateral is more than a turned, scaled rectangle: its diagonals'
    midpoints, or its opposite sides' lengths, differ by more than _MIN_SKEW."""
    p = np.array(corners)
    top, bottom = np.linalg.norm(p[1] - p[0]), np.linalg.norm(p[2] - p[3])
    left, right = np.linalg.norm(p[3] - p[0]), np.linalg.norm(p[2] - p[1])
    return bool(abs(top - bottom) > _MIN_SKEW * max(top, bottom)
                or abs(left - right) > _MIN_SKEW * max(left, right))


def along_frame(corners: Corners, size: tuple[int, int]) -> bool:
    """Whether `corners` are the frame of an image of `size`, within _FRAME_REACH: the
    paper fills the image, so no page edge, and no surround, is seen."""
    width, height = size
    frame = np.array([(0, 0), (width, 0), (width, height), (0, height)], float)
    return bool(np.abs(np.array(corners) - frame).max() <= _FRAME_REACH * max(size))


def rectify(grey: Image.Image, corners: Corners, width: int) -> Image.Image:
    """The page inside `corners` warped flat, about `width` px wide: `grey` reduced by the
    whole factor that brings it nearest (an area average), then warped."""
    p = np.array(corners)
    across = (np.linalg.norm(p[1] - p[0]) + np.linalg.norm(p[2] - p[3])) / 2
    down = (np.linalg.norm(p[3] - p[0]) + np.linalg.norm(p[2] - p[1])) / 2
    factor = max(1, round(across / width))
    reduced = grey.reduce(factor) if factor > 1 else grey
    scaled = [((x + 0.5) / factor - 0.5, (y + 0.5) / factor - 0.5) for x, y in corners]
    size = (round(across / factor), round(down / factor))
    target = [(0.0, 0.0), (float(size[0]), 0.0), (float(size[0]), float(size[1])),
              (0.0, float(size[1]))]
    return reduced.transform(size, Image.Transform.PERSPECTIVE,
                             perspective_coefficients(scaled, target),
                             Image.Resampling.BICUBIC, fillcolor=255)


def perspective_coefficients(source: Corners, target: Corners) -> tuple[float, ...]:
    """Pillow's PERSPECTIVE data: for each output (target) point, the input (source) point."""
    rows, rhs = [], []
    for (sx, sy), (tx, ty) in zip(source, target, strict=True):
        rows.append([tx, ty, 1.0, 0.0, 0.0, 0.0, -sx * tx, -sx * ty])
        rows.append([0.0, 0.0, 0.0, tx, ty, 1.0, -sy * tx, -sy * ty])
        rhs += [sx, sy]
    solved = np.linalg.solve(np.array(rows), np.array(rhs))
    return tuple(float(v) for v in solved)

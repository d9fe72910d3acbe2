"""What a leaked image shows of the served canvas: the smallest scale its mark can have.

Every served page ends in the trace strip (`render.watermark.viewer_mark`): a band the canvas's full
width, `STRIP_BACKGROUND` grey (246 on 255 paper) with lines of text, its lowest 12 px or more plain
(a pad of the strip's font size, 16 px at least, under the last line). A canvas is at most
`render.long_side` px wide (1600 by default, `render.page.sizing`). So when an image's lowest rows
(within _REACH px of its bottom) are that plain band between sides that are the page's paper
(within _REACH px of its left and right edges), the image is the served page or a part of it
no wider than the canvas, shown at a scale of at least that width / long_side: the readings
need not try smaller ones (on an unmarked page, most of the search's candidates and half the
scan's trials).

Both tell a page from a page shown on a surround: a desktop, a viewer or another document
around the page has no paper at the image's sides, or no strip grey along its bottom (a white
surround has paper-white sides, and a paper-white bottom too). Without that evidence there
is no bound: a page shown small on a white desktop is as large as a whole page to `detect`'s
other tests, and a bound from the image's size would miss it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image

LONG_SIDE = 1600  # `render.long_side`'s default
STRIP = 111  # px: a portrait page's canvas is the strip's height longer than LONG_SIDE
# px of the image's edges that may be something else: the readings crop a screenshot to its
# page's outline plus 2 px, and the outline is found to 1-3 px (a resampled or JPEG edge too).
_REACH = 12
_BAND_ROWS = 3  # rows of the strip's plain band (16 px or more of it below its text, served)
_STRIP_UNDER_PAPER = (3, 16)  # the strip's grey under the paper (9 served, 6-12 after a tone)
_BAND_SPREAD = 4  # grey levels about the band's median still the band (JPEG noise)
_BAND_SHARE = 0.95  # of a band row's pixels within that spread: plain across the whole width
_PAPER_TOLERANCE = 4  # grey levels under the paper's level still paper
_SIDE_PAPER = 0.5  # of a side column's pixels paper-like (the pattern's letters cross it)
_MIN_SIDE = 64
_MARGIN = 0.98  # slack: a candidate's measured scale may be a fraction of a per cent low


def canvas_long_side(long_side: int) -> float:
    """The longest served canvas (a portrait page's, with its strip) when pages are
    `long_side` px long (the strip's size follows the canvas's width)."""
    return long_side * (1 + STRIP / LONG_SIDE)


def least_scale(grey: Image.Image, paper: int | None, long_side: int = LONG_SIDE,
                ) -> float | None:
    """The smallest scale (image px per served px) the mark can have in `grey`, whose paper
    is at `paper` (`ink.paper_level`), when its bottom is the strip across its whole width and
    its sides are paper; else None (no bound)."""
    if paper is None or min(grey.size) < _MIN_SIDE:
        return None
    values = np.asarray(grey, dtype=np.int16)
    sides = _paper_sides(values, paper)
    if sides is None or not _strip_along_bottom(values[-_REACH:, sides[0]:sides[1]], paper):
        return None
    return _MARGIN * (sides[1] - sides[0]) / long_side


def spans_width(grey: Image.Image, paper: int | None) -> bool:
    """Whether the image's sides are the page's paper (within _REACH px of its left and right
    edges): the page across the image's whole width, no surround beside it."""
    if paper is None or min(grey.size) < _MIN_SIDE:
        return False
    return _paper_sides(np.asarray(grey, dtype=np.int16), paper) is not None


def _paper_sides(values: npt.NDArray[np.int16], paper: int) -> tuple[int, int] | None:
    """The first and past-the-last columns that are mostly paper above the image's lowest
    fifth (the page's margins, the strip left out), when they lie within _REACH px of the
    image's edges; else None."""
    above = values[_REACH: -values.shape[0] // 5] >= paper - _PAPER_TOLERANCE
    papers = np.nonzero(above.mean(axis=0) >= _SIDE_PAPER)[0]
    if len(papers) == 0 or papers[0] >= _REACH or papers[-1] < values.shape[1] - _REACH:
        return None
    return int(papers[0]), int(papers[-1]) + 1


def _strip_along_bottom(rows: npt.NDArray[np.int16], paper: int) -> bool:
    """Whether _BAND_ROWS consecutive rows of `rows` (the image's lowest, between its paper
    sides) are each one plain grey, the strip's under `paper`."""
    level = np.median(rows, axis=1, keepdims=True)
    plain = np.mean(np.abs(rows - level) <= _BAND_SPREAD, axis=1) >= _BAND_SHARE
    grey = level[:, 0]
    band = plain & (grey >= paper - _STRIP_UNDER_PAPER[1]) & (grey <= paper - _STRIP_UNDER_PAPER[0])
    run = 0
    for row_is_band in band.tolist():
        run = run + 1 if row_is_band else 0
        if run >= _BAND_ROWS:
            return True
    return False

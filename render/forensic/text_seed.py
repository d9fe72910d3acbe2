"""The text's seed: where the document's text lines put a photo's vanishing line `v` on the
line the pattern's rows allow (`render.forensic.perspective`), and whether the text's windows
can fix it there.

The text's lines are parallel on the page, so in a photo they meet in a vanishing point
(`line_field`), which puts `v` on a line of its own: the seed is where it crosses the
pattern's. Which way the text's lines run gives that line's direction; how far off their point
lies (how fast their direction turns from one line to the next) sets where along the
pattern's line the seed falls, and only windows apart across the lines see it turn. Windows
whose centres lie within a window's side of each other across the lines may all hold the same
line or two (a page of one line of text, a heading and its rule): a line meets itself
anywhere, and the fit puts its point where the windows' noise puts it (their lines through
their centres are parallel: no turn, a point at infinity). Measured on the 80 `filled` and
`crop` photos of `bench.leakmark_untuned` with a seed (seeds 41, 47, 67; the spread across
the lines of the windows the fit kept, of the long side): the 6 windows of a page of one text
line (`manual.pdf#1`, seed 67) spread 0.13, its seed 0.54 along the line from where the
photo is named with the whole line tried; two more under a window's side, 0.14 and 0.16 (a
marked photo no trial of the line names, an unmarked one); the other 77 0.26-0.85, and each
of the 41 others named so lay within 0.08 of its seed. The fit's own measures do not
tell it (the other 79 in brackets): 6 windows kept (6-35), its singular values' ratio 0.50
(0.23-0.90), its windows' median miss 0.09 degree (0.03-0.55), the seed moved 0.024 along
the line by a window left out (0.001-0.055): the windows agree, on a point one line cannot
give.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from render.forensic import line_field

Floats = npt.NDArray[np.float64]
NOT_ROWS = math.radians(12)  # text windows' lines at least this far from the pattern's rows
# The text's windows spread less than this across their lines (of the long side): they may
# all hold one line, and the seed is not fixed along the pattern's line.
_LEVERAGE = line_field.WINDOW_SIDE


class Seed(NamedTuple):
    """`v` where the text's lines put it on the pattern's line (centred units, `perspective`),
    and whether the text's windows leave it in doubt there (_LEVERAGE)."""
    point: Floats
    doubtful: bool


def text_seed(text: npt.NDArray[np.bool_], rows: Floats, to_centred: Floats, along: Floats,
              reach: float) -> Seed | None:
    """The seed of the text's strokes `text` on the pattern's line of `v` (`along`: v . (a, b)
    = -c, in the centred units `to_centred` maps the image's pixels to), when the page shows
    enough text lines and the seed lies within `reach` of 0. `rows`: the pattern's rows'
    vanishing point (homogeneous, pixels); a window whose lines run within NOT_ROWS of the
    rows there read the rows, not text (a page of little text)."""
    found = [window for window in line_field.directions(text, line_field.TEXT_DIRECTIONS)
             if _apart(window, rows) > NOT_ROWS]
    fit = line_field.vanishing_fit(found, line_field.TEXT_CONTRAST)
    if fit is None:
        return None
    lines = to_centred @ fit.point
    system = np.array([along[:2], lines[:2]])
    if abs(float(np.linalg.det(system))) < 1e-9:
        return None
    seed: Floats = np.linalg.solve(system, -np.array([along[2], lines[2]]))
    if float(np.hypot(*seed)) > reach:
        return None
    return Seed(seed, spread_across(fit.used) * float(to_centred[0, 0]) < _LEVERAGE)


def spread_across(windows: list[line_field.Direction]) -> float:
    """How far apart (px) the `windows`' centres lie across their lines' mean direction."""
    doubled = [2 * window.angle for window in windows]
    mean = math.atan2(sum(map(math.sin, doubled)), sum(map(math.cos, doubled))) / 2
    across = [window.y * math.cos(mean) - window.x * math.sin(mean) for window in windows]
    return max(across) - min(across)


def _apart(window: line_field.Direction, rows: Floats) -> float:
    """The angle between a window's lines and the direction from it to the rows' point."""
    towards = math.atan2(rows[1] - window.y * rows[2], rows[0] - window.x * rows[2])
    return abs((towards - window.angle + math.pi / 2) % math.pi - math.pi / 2)

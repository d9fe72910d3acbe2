"""The text's seed is in doubt when the text's windows cannot see its lines turn
(docs/leak-tracing-records.md, "A seed the text cannot fix"): a page of one text line fixes no point
along the pattern's line, and the framed reading then tries the whole line
(`render.forensic.text_seed`, `perspective.horizons`). Drawn here: the text lines of a page
photographed at a known vanishing line `v` (each page line's points x mapped to x / (1 - v . x),
the inverse of the projective part `perspective` undoes), as the strokes' mask."""

from __future__ import annotations

import math

import numpy as np
import pytest

from render.forensic import perspective, text_seed

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

SIZE = (675, 900)  # a working copy's, portrait
V = np.array([0.1, 0.05])  # the camera's vanishing line, centred units (of the long side)


def _photographed(heights: list[float]) -> np.ndarray:
    """The strokes' mask of page text lines at `heights` (centred units, page words 0.04
    long, 0.01 apart, 3 px thick), seen at V."""
    mask = np.zeros(SIZE[::-1], dtype=bool)
    long_side = max(SIZE)
    along = np.arange(-0.6, 0.6, 0.0005)
    words = np.mod(along, 0.05) < 0.04
    for height in heights:
        page = np.stack([along[words], np.full(int(words.sum()), height)], axis=1)
        photo = page / (1 - page @ V)[:, None]
        xs = np.rint(photo[:, 0] * long_side + SIZE[0] / 2).astype(int)
        ys = np.rint(photo[:, 1] * long_side + SIZE[1] / 2).astype(int)
        for dy in (-1, 0, 1):
            inside = (xs >= 0) & (xs < SIZE[0]) & (ys + dy >= 0) & (ys + dy < SIZE[1])
            mask[ys[inside] + dy, xs[inside]] = True
    return mask


def _seed(heights: list[float]) -> text_seed.Seed | None:
    """The text's seed of those lines on the pattern's line V allows (the rows' vanishing
    point, -30 degrees on the page, seen at V)."""
    rows_on_page = np.array([math.cos(perspective.ROWS), math.sin(perspective.ROWS)])
    rows_centred = rows_on_page / -float(V @ rows_on_page)  # v . p = -1
    to_centred = perspective.centred(SIZE)
    rows = np.linalg.inv(to_centred) @ np.array([*rows_centred, 1.0])
    return text_seed.text_seed(_photographed(heights), rows, to_centred, to_centred @ rows,
                               0.45)


def test_text_lines_over_the_page_fix_the_seed() -> None:
    seed = _seed(list(np.arange(-0.45, 0.46, 0.035)))
    assert seed is not None and not seed.doubtful
    assert float(np.hypot(*(seed.point - V))) < 0.02, seed


def test_one_text_line_leaves_the_seed_in_doubt() -> None:
    """Its windows (two rows of them overlap the line) spread 0.125 of the long side across
    it: every window sees the same line, which shows no turn."""
    seed = _seed([-0.15])
    assert seed is not None and seed.doubtful
    assert float(np.hypot(*(seed.point - V))) > 0.1, seed  # where the noise puts it

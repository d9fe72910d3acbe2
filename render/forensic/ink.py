"""A second reading of a page whose paper was clipped to white (brightness or contrast raised).

Brightening by 20 % sends every pixel above 212 to 255: the paper, where the mark usually
speaks, carries nothing any more. What is left unclipped is mostly ink, and one ink is
vaultd's own: the visible pattern's letters, blended at a fixed opacity, are one flat grey
wherever they cover paper (196, a level any brightness or contrast change keeps unique). The
mark darkens them too (by 3 x 196 / 255 levels), so keeping only the pixels within INK_BAND of
that level, centred, leaves the mark with little of the page's content around it: the
high-pass residual of `sync.residual` would drown it in the letters' own edges.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter

INK_BAND = 12.0  # grey levels either side (measured: 6 and 16 do worse, 24 fails)
_PAPER_MIN = 200  # the commonest level must be paper-like for the page to have ink on paper
_INK_BELOW_PAPER = (12, 90)  # the pattern's ink sits this far below paper (59 unchanged)
_MIN_PAPER_SHARE = 0.05
_PAPER_REACH = 4  # px: the letters' strokes are 4-5 px wide on a served page
_PAPER_TOLERANCE = 4  # grey levels under the paper's level still paper (JPEG noise)
_MIN_INK_SHARE = 0.005  # of the image's pixels, or there is too little ink to fold
FLATNESS_REACH = 6  # grey levels: a darkened chip (3 under the paper) and JPEG's noise


def paper_level(grey: Image.Image, counts: npt.NDArray[np.int64] | None = None) -> int | None:
    """The paper's grey level: the lightest level holding a share of the image (not a
    desktop's grey, which may be the commonest level of a screenshot), or None. `counts`:
    the image's histogram, when the caller has it already."""
    if counts is None:
        counts = np.asarray(grey.histogram(), dtype=np.int64)
    papers = np.nonzero(counts[_PAPER_MIN:] >= _MIN_PAPER_SHARE * counts.sum())[0]
    return None if len(papers) == 0 else _PAPER_MIN + int(papers[-1])


def paper_flatness(counts: npt.NDArray[np.int64], paper: int) -> float:
    """The share of the paper-like pixels (FLATNESS_REACH levels under the paper's `paper`
    level or lighter) that are exactly at that level, from the image's histogram `counts`."""
    near = counts[max(0, paper - FLATNESS_REACH):].sum()
    return float(counts[paper] / near) if near else 0.0


def near_paper(grey: Image.Image, paper: int) -> npt.NDArray[np.bool_]:
    """Pixels within _PAPER_REACH px of paper: the pattern's letters are drawn on paper (their
    halo is paper-white), a photograph's mid-greys, which may outnumber them, are not."""
    is_paper = grey.point([255 if v >= paper - _PAPER_TOLERANCE else 0 for v in range(256)])
    spread: npt.NDArray[np.bool_] = np.asarray(
        is_paper.filter(ImageFilter.BoxBlur(_PAPER_REACH))) > 0
    return spread


def ink_range(paper: int) -> tuple[int, int]:
    """The grey levels the visible pattern's ink may have on paper of level `paper`."""
    return paper - _INK_BELOW_PAPER[1], paper - _INK_BELOW_PAPER[0]


def ink_level(grey: Image.Image) -> int | None:
    """The grey level of the visible pattern's ink in `grey`, or None if it has none to read:
    the commonest level well under the paper's, among pixels that are not flat (a
    screenshot's desktop is one flat level, and may outnumber the ink)."""
    counts = np.asarray(grey.histogram(), dtype=np.int64)
    paper = paper_level(grey, counts)
    if paper is None:
        return None
    values = np.asarray(grey, dtype=np.int16)
    textured = np.zeros(values.shape, dtype=bool)
    textured[:-1, :-1] = (values[:-1, :-1] != values[1:, :-1]) | (values[:-1, :-1] !=
                                                                   values[:-1, 1:])
    textured &= near_paper(grey, paper)
    ink_counts = np.bincount(values[textured].ravel(), minlength=256)
    low, high = ink_range(paper)
    level = low + int(np.argmax(ink_counts[low: high + 1]))
    band = counts[max(0, level - int(INK_BAND)): level + int(INK_BAND) + 1].sum()
    return level if band >= _MIN_INK_SHARE * counts.sum() else None

"""Which document page a leak shows, as a short keyed print (docs/leak-tracing.md, "A year of
views"): what narrows a placement trace from every view of the account to the views of one page.

The print is made the same way from a page as served (`vaultd.services.tracing.page_prints`
keeps it, per file and page) and from a leak, so whatever both carry alike drops out:

1. the strip under the page is left out (from its rule down, `_page_rows`): its text names the
   viewer and the moment, which differ per view;
2. only ink darker than the visible pattern's counts (DEEP grey levels under the paper:
   the pattern's letters sit 55 under, at most 90, `ink`), as darkness past that level; the
   pattern, whoever's text it carries and wherever its words sit, is gone, and so is the
   invisible mark (3 levels);
3. that darkness averaged over a GRID x GRID grid of the page's whole height and width (a
   rescaled leak gives the same grid), its mean taken off;
4. its sign on each of BITS projections drawn from the deployment's print key
   (`render.forensic_wire.page_print.projections`: SHAKE-128, stable across libraries): a
   random-hyperplane hash, whose bits agree in proportion to the angle between two grids.

A washed, rescaled and recompressed leak's print differs from its page's in a few bits of 256;
another page's in about half (`tests/test_placement_page_print.py`). The bits are meaningless
without the key (they are signs of keyed projections), and 256 of them cannot draw the page.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import ink
from render.forensic_wire.page_print import BITS, GRID, projections

DEEP = 90  # grey levels under the paper: the pattern's letters are never darker (`ink`)
_STRIP_UNDER_PAPER = (3, 16)  # the strip's grey band under the paper (`served`)
_STRIP_REACH = 0.2  # of the width: the strip is 0.09 of it (its text wraps on a narrow page)
_RULE_UNDER_PAPER = 30  # grey levels: the strip's rule is 85 under, blurred when rescaled
_RULE_SPREAD = 12  # grey levels about a row's median still that row's one grey (JPEG noise)
_PLAIN_SHARE = 0.9  # of a row's pixels: the rule, one grey across the whole width
_BAND_SHARE = 0.8  # of the rows under the rule that are the strip's band (its text's are too)
_MIN_ROWS = 64  # px of page above the strip: less shows too little to say which page
_MIN_SPREAD = 0.5  # grey levels: a grid flatter than this (a blank page) has no print


def page_print(image: Image.Image, key: bytes) -> bytes | None:
    """The page's print, BITS // 8 bytes, under the deployment's print `key`; None for a page
    with no ink darker than the pattern's (a blank page, or one the pattern alone covers)."""
    grey = image.convert("L")
    paper = ink.paper_level(grey) or 255
    values = np.asarray(grey, dtype=np.float32)
    rows = _page_rows(values, paper)
    if rows < _MIN_ROWS:
        return None
    darkness = np.clip((paper - DEEP) - values[:rows], 0.0, None)
    grid = np.asarray(Image.fromarray(darkness, "F").resize((GRID, GRID), Image.Resampling.BOX),
                      dtype=np.float64).ravel()
    centred = grid - grid.mean()
    if float(centred.std()) < _MIN_SPREAD:
        return None
    signs: npt.NDArray[np.bool_] = projections(key) @ centred > 0
    assert signs.shape == (BITS,)
    return np.packbits(signs).tobytes()


def _page_rows(values: npt.NDArray[np.float32], paper: int) -> int:
    """The rows above the strip: above its rule (a plain dark row across the whole width, in
    the image's lowest _STRIP_REACH of its width) when the rows under it are the strip's grey
    band; all of them when no strip shows (a leak cut above it). Not the band alone: the
    invisible mark and JPEG leave a margin's rows 3 levels under the paper, the band's own
    depth on a raised tone."""
    reach = min(len(values), int(_STRIP_REACH * values.shape[1]) + 1)
    low = values[len(values) - reach:]
    medians = np.median(low, axis=1)
    plain = np.mean(np.abs(low - medians[:, None]) <= _RULE_SPREAD, axis=1) >= _PLAIN_SHARE
    rule = plain & (medians <= paper - _RULE_UNDER_PAPER)
    band = (medians >= paper - _STRIP_UNDER_PAPER[1]) & (medians <= paper - _STRIP_UNDER_PAPER[0])
    for row in np.nonzero(rule)[0]:
        under = ~rule[row:]
        if under.any() and band[row:][under].mean() >= _BAND_SHARE:
            return len(values) - reach + int(row)
    return len(values)

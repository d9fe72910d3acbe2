"""Reading a phone photo of a page shown on a screen (docs/leak-tracing.md, "Phone photos").

1. The page's quadrilateral is found and the perspective undone (`rectify`), on a copy of the
   photo reduced by a whole factor so that the page is about _WORK_WIDTH px wide: the box
   average takes out most of the sensor noise and the screen's pixel grid (moire), which the
   chips (8 px served, 10-30 px in the photo) outlast.
2. What the rectification cannot know is the page's true aspect (foreshortening shortens one
   pair of sides by up to about 6 % over 20 degrees) and the served size. Served pages have a
   long side of render.long_side px (1600) plus the strip, which gives the scale to within a few per
   cent; the residual's points are then folded at every (scale, aspect) pair around it (the
   autocorrelation of a photo shows its text lines and moire, not the tile lattice) and the
   best pairs refined and decoded with the same checks as every other reading: sync >= 6
   standard deviations, then the CRC.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import coarse, framed, rectify, scan, served, sync
from render.forensic.layout import CHIP, Layout
from render.forensic.pattern_model import Points

_WORK_WIDTH = 550  # px: the rectified page's width (chips of 3.5 px: still read)
_SCALE_REACH = 0.06  # ln(scale) searched either side of that estimate
# Height / width corrections tried: at 20 degrees of tilt the mean sides were off by up to 5 %.
_ASPECTS = np.exp(np.arange(-0.06, 0.0601, 0.01))
_STEP = 0.004
_FINE = 8
_CANDIDATES = 4
_WORTH_REFINING = 4.0
_DARKER_CHANNEL = 3  # grey levels under the luminance's paper for a channel to be read too
_CLIPPED = 250  # a channel's paper this light is clipped in part (the mark is 3 levels, noise 2-4)
_COARSE_POINTS = 30_000  # points in each coarse trial (0.5 ms); the decode reads them all
# A page's edge seen: the levels just outside each side (this share of the image's long side
# out, at _ALONG of its length), _IN_FRAME of them inside the frame, their median this much
# under the paper just inside. Measured (the side least so): phone photos 109-202 levels
# under the paper, the untuned bench's pages on a desk 97-187; quadrilaterals found in
# photos framed on the page (a text block's outline) 21 at most, paper just outside them.
# Near, not far: a page that nearly fills the frame leaves a surround of 15-75 px in 4,032.
_SURROUND = 0.004
_ALONG = np.linspace(0.1, 0.9, 33)
_IN_FRAME = 0.9
_EDGE_CONTRAST = 30


def readings(image: Image.Image, grey: Image.Image, corners: rectify.Corners | None,
             plan: Layout, long_side: int = served.LONG_SIDE, page_shown: bool = False,
             lines: framed.Lines | None = None) -> tuple[tuple[int, float] | None, bool]:
    """(render id, sync score) or None from a photo, and whether the reading settles the
    image: a photo in perspective is not read further (the decoder's later readings model no
    perspective: seconds spent for nothing). With the page's `corners`, a photo of a screen
    (`read_photo`); without them, or when corners in perspective read nothing and are no
    page's edges seen (`edges_seen`: a dense text block's outline can pass for a page's
    corners), or upright ones lie along the frame's own border (`rectify.along_frame`: the
    paper fills the frame), a photo framed on the page, its perspective read
    off the page's own lines (`render.forensic.framed`), unless the image is no camera's
    (`page_shown`: a served page shown upright, its strip across its bottom, or paper flat
    to one level). `lines`: `framed.lines(grey)`, when the caller has them."""
    tilted = False
    if corners is not None:
        found = read_photo(image, grey, corners, plan, long_side)
        tilted = rectify.needs_rectifying(corners)
        # Upright corners along the frame's own border are no page's outline: a photo framed
        # on the page (its paper to every side) may still show a perspective its lines tell.
        if found is not None or not (tilted or rectify.along_frame(corners, grey.size)):
            return found, found is not None
        if edges_seen(grey, corners):
            # The page's own edges: the perspective they gave is the page's, and the framed
            # reading would read the same page through looser estimates (seconds, for none of
            # the photos the corners' reading missed, docs/leak-tracing.md).
            return None, True
    if page_shown:
        return None, tilted
    if corners is None:
        # A page on a desk that covers under a quarter of the frame (`rectify.SMALL_PAGE_AREA`):
        # its corners, when each side is an edge seen (a glare spot on the desk beside the
        # page can join its bright region), read and settle it as any page's.
        small = rectify.page_corners(grey, rectify.SMALL_PAGE_AREA)
        if small is not None and rectify.needs_rectifying(small) and edges_seen(
                grey, small, each_side=True):
            return read_photo(image, grey, small, plan, long_side), True
    reading = framed.read_framed(grey, plan, lines)
    return reading.found, tilted or reading.found is not None or reading.tilted


def edges_seen(grey: Image.Image, corners: rectify.Corners, each_side: bool = False) -> bool:
    """Whether every side of the quadrilateral `corners` is a page's edge seen in `grey`:
    just outside it (_SURROUND of the image's long side), inside the frame, a surround
    _EDGE_CONTRAST darker than the paper just inside. A page on a screen, or on a desk, has
    one; the outline of a dense text block that passed for a page's in a photo framed on the
    page has paper or the frame's border there. `each_side`: darker than what lies just inside
    that very side too (a glare spot on the desk that joined the page's bright region has the
    desk on both sides of its outline: 141-162 levels each side; a page's edges 101-180 apart)."""
    points = np.array(corners)
    centre = points.mean(axis=0)
    reach = _SURROUND * max(grey.size)
    outside, inside = [], []
    for start, end in zip(points, np.roll(points, -1, axis=0), strict=True):
        side = end - start
        normal = np.array([side[1], -side[0]]) / max(float(np.hypot(*side)), 1e-9)
        if normal @ (start - centre) < 0:
            normal = -normal  # pointing away from the page
        along = start + _ALONG[:, None] * side
        outside.append(_levels(grey, along + reach * normal))
        inside.append(_levels(grey, along - reach * normal))
    within = np.concatenate(inside)
    within = within[np.isfinite(within)]
    if len(within) == 0:
        return False
    paper = float(np.percentile(within, 90))
    return all(bool(np.isfinite(levels).mean() >= _IN_FRAME)
               and float(np.median(levels)) <= paper - _EDGE_CONTRAST
               and (not each_side or _stepped(levels, own))
               for levels, own in zip(outside, inside, strict=True))


def _stepped(outside: npt.NDArray[np.float64], inside: npt.NDArray[np.float64]) -> bool:
    """Whether a side's levels just inside are _EDGE_CONTRAST over those just outside."""
    within = inside[np.isfinite(inside)]
    return len(within) > 0 and float(np.median(within)) - float(
        np.median(outside[np.isfinite(outside)])) >= _EDGE_CONTRAST


def _levels(grey: Image.Image, points: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """`grey`'s levels at `points` (x, y), infinite outside the frame."""
    levels = np.full(len(points), np.inf)
    for n, (x, y) in enumerate(points):
        if 0 <= x < grey.width and 0 <= y < grey.height:
            level = grey.getpixel((int(x), int(y)))
            assert isinstance(level, (int, float))
            levels[n] = level
    return levels


def read_photo(image: Image.Image, grey: Image.Image, corners: rectify.Corners, plan: Layout,
               long_side: int = served.LONG_SIDE) -> tuple[int, float] | None:
    """(render id, sync score) from a photo `image`, its luminance `grey` (`convert("L")`,
    which the caller has: about 30 ms of a 12 MP photo), of a page whose corners are `corners`
    (`rectify.page_corners`), or None when no mark passes both checks. The luminance first,
    then, for a colour photo one of whose channels is clipped on the paper, its least exposed
    channel: a white balance that lifts one channel to 255 on the paper clips the mark there,
    and takes that channel's share of it out of the luminance (measured: a photo whose paper
    read 253 in luminance, 246 in blue, scored 3.3 in luminance and 10.0 in blue). With no
    channel clipped the luminance holds the whole mark: of 24 photos (`bench.leakmark --family
    phone`, seed 5) the darkest channel read none the luminance missed. `long_side`: the
    deployment's `render.long_side` (`served`)."""
    found = _read(grey, corners, plan, long_side)
    if found is not None or image.mode != "RGB":
        return found
    bands = image.split()
    levels = [_paper(band, corners) for band in bands]
    if max(levels) < _CLIPPED:
        return None  # no channel clipped on the paper: nothing the luminance lacks
    darkest = min(range(3), key=lambda index: levels[index])
    if levels[darkest] > _paper(grey, corners) - _DARKER_CHANNEL:
        return None  # no channel keeps more of the paper's mark than the luminance
    return _read(bands[darkest], corners, plan, long_side)


def _paper(grey: Image.Image, corners: rectify.Corners) -> float:
    """The page's paper level: the 90th percentile of a small flat copy."""
    return float(np.percentile(np.asarray(rectify.rectify(grey, corners, width=200)), 90))


def _read(grey: Image.Image, corners: rectify.Corners, plan: Layout, long_side: int,
          ) -> tuple[int, float] | None:
    flat = rectify.rectify(grey, corners, width=_WORK_WIDTH)
    tall = flat.height >= flat.width
    # A served page's long side is `long_side`, a portrait page's canvas the strip taller.
    estimate = (flat.height / served.canvas_long_side(long_side) if tall
                else flat.width / long_side)
    points = _points(flat, estimate)
    if len(points[2]) < scan.MIN_POINTS:
        return None
    return scan.first_decoded((scan.fine_fold(_stretched(points, scale_y / scale_x), scale_x, 0.0)
                               for scale_x, scale_y in _candidates(points, estimate, tall, plan)),
                              plan)


def _points(flat: Image.Image, scale: float) -> Points:
    """The residual's non-zero pixels (the paper's, away from text): rows, columns, values.
    All of them: thinned to the scan's 60,000, the fold lost a third of its score."""
    detail = sync.residual(flat, max(1.0, CHIP * scale / 2))
    ys, xs = np.nonzero(detail)
    return ys.astype(np.float64), xs.astype(np.float64), detail[ys, xs].astype(np.float64)


def _stretched(points: Points, aspect: float) -> Points:
    """The points with their rows divided by `aspect`: a fold at one scale then folds the
    rows at scale x aspect."""
    ys, xs, values = points
    return ys / aspect, xs, values


def _candidates(points: Points, estimate: float, tall: bool, plan: Layout,
                ) -> list[tuple[float, float]]:
    """(horizontal, vertical) scales worth decoding, best first: every aspect and scale near
    the estimate folded coarsely, the best few refined in scale."""
    sample = scan.thinned(points, _COARSE_POINTS)
    scales = estimate * np.exp(np.arange(-_SCALE_REACH, _SCALE_REACH + 1e-9, _STEP))
    # The long side's scale is the one the estimate is about.
    along = np.concatenate([scales / aspect if tall else scales for aspect in _ASPECTS])
    aspects = np.repeat(_ASPECTS, len(scales))
    values = coarse.scores(sample, np.stack([along, along * aspects], axis=1), 0.0, plan)
    trials = list(zip(values.tolist(), along.tolist(), aspects.tolist(), strict=True))
    trials.sort(reverse=True)
    found: list[tuple[float, float, float]] = []
    tried: list[tuple[float, float]] = []
    for value, scale, aspect in trials:
        if value < _WORTH_REFINING or len(tried) == _CANDIDATES:
            break
        if any(abs(math.log(scale / s)) < 2 * _STEP and abs(math.log(aspect / a)) < 0.015
               for s, a in tried):
            continue
        tried.append((scale, aspect))
        stretched = _stretched(scan.thinned(points, scan.MAX_POINTS), aspect)
        # As in `scan.best_scales`: a peak of chance falls back under PROBE once folded finely.
        probe = scan.fold_score(scan.fine_fold(stretched, scale, 0.0), plan)
        if probe < scan.PROBE:
            continue
        found.append((probe, scale, aspect))
        for k in range(-_FINE, _FINE + 1):
            if k:
                fine = scale * math.exp(k * _STEP / _FINE)
                found.append((scan.fold_score(scan.fine_fold(stretched, fine, 0.0), plan), fine,
                              aspect))
    found.sort(reverse=True)
    return [(scale, scale * aspect) for _, scale, aspect in found[: 2 * _CANDIDATES]]

"""Reading the mark back from a leaked image: find the lattice, fold, align, decode, check.

1. The tile vector from the autocorrelation (`sync`) gives scale and rotation (no candidate
   when the paper was clipped to white: too sparse a residual to search, counting none on
   paper so flat it carries no mark, _FLAT_PAPER; none smaller than the page can be shown
   when the image shows the page's strip and paper to its edges, `served`).
2. The residual is resampled into the mark's own frame and every tile is summed into one
   (folding): the chips add up, page content averages out.
3. The folded tile's cyclic cross-correlation with the sync template gives the unknown offset.
4. Each payload bit is the sum of its REPEAT chips' soft values (the weakest few may be
   flipped, Chase decoding); the bits must pass the CRC and
   the sync chips must agree with the template far beyond chance (SYNC_THRESHOLD standard
   deviations) before an id is reported. Either check alone would let a random image through
   now and then; both together have never done so in our runs (docs/leak-tracing.md).
5. If nothing decodes and the paper may have been clipped to white (brightness or contrast
   raised), a second reading of the image: the visible pattern's ink (`render.forensic.ink`),
   the pattern modelled and subtracted (`render.forensic.pattern_model`), folded at every
   scale (`render.forensic.scan`): the autocorrelation of so sparse a reading cannot show the
   mark's scale. Then the same at the ink level the pattern's lattice shows, when the
   histogram's differs (JPEG q50 after a raised tone leaves no ink peak in the histogram).
   (An autocorrelation search of the ink at the served size came before the scan once: the
   scan reads every leak it read, and an unmarked image paid for both.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import (
    chips,
    folding,
    framed,
    ink,
    layout,
    pattern_model,
    photo,
    rectify,
    scan,
    served,
    sync,
)
from render.forensic.layout import PUBLIC, TILE, Layout

SYNC_THRESHOLD = 6.0
CHASE_BITS = 5  # 32 CRC trials at most per alignment; the sync threshold guards the rest
_SCALE_NUDGES = (1.0, 0.997, 1.003)  # tried in turn when the first estimate does not decode
_NUDGE_WORTHY = 4.5  # ...and only when the template shows faintly (unmarked images: about 3)
# A candidate is folded in full only when its fold at chip resolution scores this (unmarked
# images: 4.2 at p95; a candidate the full fold read at 6 or more: 5.6 and more).
_SCREEN = 4.5
_MAX_PIXELS = 12_000_000
_MAX_SCAN_PIXELS = 4_000_000  # read by the scan: a few per cent of them are ink
_HALVED_PAGE = 1.1  # a screenshot's page this much larger than served is read at half size
# An image whose long side is this share of the served canvas's or more, and no screenshot,
# is read at the histogram's ink level only when it has one: of the 503 leaks the scan read
# among 1,800 (`bench.leakmark` and `bench.leakmark_pairs`, two seeds each), every one that a
# lattice's level read after the histogram's had failed was a screenshot or shrunk to half
# (566 px wide); the lattice's levels cost an unmarked page 0.1-0.35 s.
_SERVED_SIZE = 0.9
_UPRIGHT = 0.25  # degrees: a lattice this near its served angle is read upright only
# Autocorrelation peaks tried as the tile vector. After a rescale and JPEG q50 the 8-px block
# grid puts peaks at multiples of 8 px (144, 200 at 640 px wide) above the tile's own (99):
# 640 px + q50 read 37/48 with the best 2, 47/48 with the best 4 (unmarked images: 0 found).
_CANDIDATES = 4
# Then as many under the scale of 0.3, down to 0.2, where the image is read at full size
# (`sync.SMALL_SCALE`): a page shown that small is a few hundred px wide.
_SMALL_CANDIDATES = 2
# Paper this flat carries no mark for the search (steps 1-4) to read: of its paper-like pixels
# this share or more are exactly the paper's level. Marked pages: 0.13-0.54 after every leak
# of `bench.leakmark` without a raised tone (half the chips are 3 levels darker); with one, the
# paper clipped, up to 0.99; unmarked pages 0.58-0.99. The search then counts only the residual
# off the paper (a page half colour block keeps 1.2-6.4 % there, its mark read by the search;
# JPEG q50 on a clipped text page 0.13-0.39 %, which spares an unmarked one 0.1-0.2 s).
_FLAT_PAPER = 0.8
# The text's seed this far from 0 (`framed.text_tilt`, |v| in units of the image's long side)
# shows a perspective the search, which models none, does not read through: of the 72 marked
# leaks of `bench.leakmark_untuned` (seeds 41 and 47, every family) the search named none
# whose seed lay beyond 0.052 (a crop, which the framed reading names too); the 32 `filled`
# and `crop` leaks the framed reading named lay at 0.064-0.44, each searched in vain first
# (0.3-1.6 s each). The unmarked ones with a seed: 0.015-0.25, 16 of 20 at 0.08 or more.
_SEARCHED_TILT = 0.08
_SAME_INK = 4  # grey levels: a second ink level this close would read the same pixels
# A histogram ink level this near the paper (its band reaches the paper's JPEG noise) is that
# noise, not the pattern's ink: brightness +20 % + JPEG q50 puts it at 242-243 on 255 paper,
# where the model "fits" every pixel. Its scan is left to the lattice's levels: those leaks
# read 47/48 either way (seeds 100-103, the same miss), contrast +20 % 48/48; an unmarked one
# is spared a scan (0.15-0.2 s).
NEAR_PAPER = 13
_MIN_SIDE = math.ceil(2 * TILE * sync.MIN_SCALE)
Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Detection:
    render_id: int
    sync_score: float  # standard deviations above chance
    scale: float  # leaked image pixels per rendered pixel
    angle: float  # degrees


def decode(image: Image.Image | npt.NDArray[np.uint8], plan: Layout = PUBLIC,
           long_side: int = served.LONG_SIDE) -> int | None:
    """The render id marked in `image` in `plan`'s layout, or None when no mark passes both
    checks. `long_side`: the deployment's `render.long_side`, which bounds the scale when the
    image shows the served page's strip (`served`)."""
    found = detect(image, plan, long_side)
    return found.render_id if found is not None else None


def detect(image: Image.Image | npt.NDArray[np.uint8], plan: Layout = PUBLIC,
           long_side: int = served.LONG_SIDE) -> Detection | None:
    source = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    if min(source.size) < _MIN_SIDE:
        return None  # under two tiles at the smallest scale: nothing to fold
    grey = full = source.convert("L")
    canvas = served.canvas_long_side(long_side)  # a served page's long side, at most
    while grey.width * grey.height > _MAX_PIXELS:
        # Halved until the decode fits a render task's time: a page shown that large has
        # chips of 12 px or more, which stay above 4 px.
        grey = grey.reduce(2)
    corners = rectify.page_corners(full)
    upright = corners is not None and not rectify.needs_rectifying(corners)
    if corners is not None and upright:
        # A page shown upright on a desktop (a screenshot): the mark is on the page only, and
        # the desktop would cost every reading as much as the page does.
        grey = _page_part(grey, corners, full.width)
        if max(grey.size) >= _HALVED_PAGE * canvas:
            # A page shown this large has chips of 9 px or more: half the pixels still hold
            # them at 4.4 px (the scan reads 640 px wide pages: 4 px), a quarter of the work.
            # The search reads the same screenshots at half size as at full (176 of the 264
            # with a screenshot in `bench.leakmark` and its pairs, 2 seeds; the scan reads the
            # others, whose paper is clipped).
            grey = grey.reduce(2)
    counts = np.asarray(grey.histogram(), dtype=np.int64)
    paper = ink.paper_level(grey, counts)
    # The smallest scale the mark can have, when the image shows it is the page (`served`).
    shown = served.least_scale(grey, paper, long_side)
    # Scales under 0.3 are read only at full size (`sync.SMALL_SCALE`).
    least = shown or (0.0 if sync.read_at_full_size(grey) else sync.MIN_SCALE)
    # Flat paper carries no mark: the search reads only what lies off it, if enough does.
    flat_paper = None
    if paper is not None and ink.paper_flatness(counts, paper) >= _FLAT_PAPER:
        flat_paper = paper - ink.FLATNESS_REACH
    # A page in perspective whose four sides are edges seen (a phone photo of a screen, a page
    # on a desk) is the photo reading's, which settles it: the search models no perspective,
    # and of the 27 such marked leaks of `bench.leakmark --family phone` and the untuned
    # bench's `margin` (docs/leak-tracing-records.md, "What a miss costs, again") it named none the
    # photo reading missed; an unmarked phone photo's largest cost, about 0.35 s.
    seen = corners is not None and not upright and photo.edges_seen(full, corners)
    # Paper flat to one level is no camera's (`_FLAT_PAPER`): no photo framed on it.
    plain = bool(shown) or flat_paper is not None
    # An image the framed reading would read (no page's edges seen, no page shown upright):
    # its lines first, the framed reading's own start (`framed.lines`). Upright corners along
    # the frame's own border show no page (`rectify.along_frame`): the paper fills the frame,
    # as in a photo framed on the page (a seed-73 `filled` leak was never read framed).
    framing = corners is not None and rectify.along_frame(corners, full.size)
    lines = None
    if not seen and not plain and (not upright or framing):
        lines = framed.lines(full)
    tilt = None if lines is None else framed.text_tilt(lines)
    # A page whose text's lines show a perspective the search cannot fold through is not
    # searched: the framed reading reads it (`_SEARCHED_TILT`).
    if seen or (tilt is not None and tilt >= _SEARCHED_TILT):
        found = None
    else:
        found = _search(grey, plan, least, flat_paper)
    if found is None:
        # A photo: its perspective undone from the page's corners, or from its lines.
        read, settled = photo.readings(source, full, corners, plan, long_side, plain, lines)
        if read is not None:
            return Detection(read[0], read[1], 1.0, 0.0)
        if settled:
            return None  # in perspective: the later readings model none
        # The paper may have been clipped to white (brightness or contrast raised): read the
        # visible pattern's ink instead (`render.forensic.ink`), at every scale.
        if paper is not None:
            # A page at its served size or larger that is no screenshot: the histogram's ink
            # level is the letters' own, when it shows one (`_scan_ink`).
            whole = corners is None and max(grey.size) >= _SERVED_SIZE * canvas
            found = _scan_ink(grey, ink.ink_level(grey), plan, whole, least)
    return found


def _page_part(grey: Image.Image, corners: rectify.Corners, full_width: int) -> Image.Image:
    """`grey` cut to the bounding box of the page's `corners` (found on the image at
    `full_width`), 2 px of margin."""
    factor = grey.width / full_width
    xs = [x * factor for x, _ in corners]
    ys = [y * factor for _, y in corners]
    box = (max(0, math.floor(min(xs)) - 2), max(0, math.floor(min(ys)) - 2),
           min(grey.width, math.ceil(max(xs)) + 3), min(grey.height, math.ceil(max(ys)) + 3))
    return grey.crop(box)


def _scan_ink(grey: Image.Image, level: int | None, plan: Layout, whole: bool, least: float,
              ) -> Detection | None:
    """The scan at the histogram's ink level (unless that is JPEG's noise beside the paper,
    NEAR_PAPER), then at the levels the pattern's lattice shows that differ from every level
    tried (after JPEG q50 the histogram has no ink peak; on a page shrunk to half it shows the
    letters' edges, lighter than their cores; on a screenshot it may be the desktop's). Not
    then when the page is `whole` (no screenshot, at its served size or larger) and its
    histogram level was scanned: there that level is the letters' cores (_SERVED_SIZE); nor
    when the lattice's darkest level agrees with the histogram's, which then was the cores."""
    # Its central part at most (halving instead blurs 3-px chips out: measured worse).
    grey = folding.central_part(grey, _MAX_SCAN_PIXELS / (grey.width * grey.height))
    flat = pattern_model.flat_areas(grey)  # the same for every level read
    tried: list[int] = []
    known = _Known(None, None)
    paper = ink.paper_level(grey)
    if level is not None and paper is not None and level >= paper - NEAR_PAPER:
        level = None  # JPEG's noise beside the paper: the lattice's levels are read instead
    if level is not None:
        found, known = _scan(grey, level, flat, known, plan, least)
        if found is not None or whole:
            return found
        tried.append(level)
    others, lattice = pattern_model.lattice_ink_levels(grey, flat, known.lattice)
    if known.lattice is None and lattice is not None and pattern_model.lattice_rotation(
            lattice) is not None:
        known = known._replace(lattice=lattice)
    if level is not None and others and abs(min(others) - level) <= _SAME_INK:
        # The histogram's level was the letters' cores (the lattice's darkest level agrees):
        # what is left is their edges' level, lighter. Measured: an unmarked screenshot's
        # histogram 196-197, the lattice's darkest 196-199 (its edges' 200-208 cost a scan);
        # every leak a lattice's level read after the histogram's had failed (11 in 2,448)
        # had the histogram at least 8 levels off the lattice's darkest (15-64 where recorded).
        return None
    for other in others:
        if all(abs(other - done) > _SAME_INK for done in tried):
            found, known = _scan(grey, other, flat, known, plan, least)
            if found is not None:
                return found
            tried.append(other)
    return None


class _Known(NamedTuple):
    """What the ink's readings so far showed of the page: its rotation, from the first whose
    lattice showed it (a later level's reading may hold more of the mark but show no lattice:
    too many other pixels), and the pattern's lattice, once one was the pattern's brick bond
    (`pattern_model.lattice_rotation`): every level's reading models the same pattern, and
    finding its lattice again costs an autocorrelation of the image (0.04-0.08 s)."""
    rotation: float | None
    lattice: pattern_model.Lattice | None


def _scan(grey: Image.Image, level: int, flat: npt.NDArray[np.bool_], known: _Known,
          plan: Layout, least: float) -> tuple[Detection | None, _Known]:
    """The clipped page read at every scale from `least` (`scan`), the visible pattern
    subtracted first (`pattern_model`): the autocorrelation of its ink cannot show the mark's
    scale. Also what is known of the page after this reading: `known` (the earlier
    readings'), completed by this reading's."""
    reading = pattern_model.ink_points(grey, level, flat, known.lattice)
    shown = None if reading is None else reading.rotation
    if reading is not None and shown is not None:
        known = _Known(known.rotation if known.rotation is not None else shown,
                       reading.lattice)
    if reading is None or len(reading.points[2]) < scan.MIN_POINTS:
        return None, known
    points = scan.thinned(reading.points, scan.MAX_POINTS)
    # A rotated leak is read at the angle the pattern's lattice shows, then upright (the
    # lattice's angle is measured to about 0.1 degree; an upright page costs one scan only).
    turned = shown if shown is not None else known.rotation
    angles = [turned, 0.0] if turned is not None and abs(turned) > _UPRIGHT else [0.0]
    for degrees in angles:
        angle = math.radians(degrees)
        for _, scale in scan.best_scales(points, angle, plan, least):
            tile = chips.aligned(scan.fine_fold(points, scale, angle), plan)
            score = chips.sync_score(tile, plan)
            if score >= SYNC_THRESHOLD:
                render_id = scan.chase(chips.votes(tile, plan), scan.CHASE_BITS)
                if render_id is not None:
                    return Detection(render_id, score, scale, degrees), known
    return None, known


def _search(grey: Image.Image, plan: Layout, least: float, flat_paper: int | None,
            ) -> Detection | None:
    """The first candidate tile vector (those the autocorrelation of the image's residual
    suggests, at a scale of `least` or more; none when too little of it lies off the
    `flat_paper`, `sync.tile_vectors`) that decodes."""
    kept = folding.kept()
    for found_vector in sync.tile_vectors(grey, _CANDIDATES, flat_paper, _SMALL_CANDIDATES):
        if math.hypot(*found_vector) < least * TILE:
            continue  # smaller than the page can be shown (`served`)
        vector = folding.finer(grey, found_vector, kept, plan)
        for nudge in _SCALE_NUDGES:
            found, score, folded = _read(grey, (vector[0] * nudge, vector[1] * nudge), kept,
                                         plan)
            if found is not None:
                return found
            if not folded or score < _NUDGE_WORTHY:
                # No trace of the template here: a nudge in scale will not bring it. (Every
                # leak the search read after a nudge had been folded in full first, at 5.3 and
                # more; a screened-out one was nudged for 640 px + brightness +20 %, whose
                # residual is now too sparse to search: `sync.MIN_RESIDUAL_SHARE`.)
                break
    return None


def _read(grey: Image.Image, vector: tuple[float, float], detail: folding.Levels, plan: Layout,
          ) -> tuple[Detection | None, float, bool]:
    """The detection along one candidate tile vector (or None), its sync score, and whether
    that is the full fold's (else the screen's)."""
    scale = math.hypot(*vector) / TILE
    screened = folding.screen(grey, vector, detail, plan)
    if screened < _SCREEN:
        return None, screened, False
    folded = folding.fold(grey, vector, detail)
    tile = chips.aligned(folded, plan)
    score = chips.sync_score(tile, plan)
    if score < SYNC_THRESHOLD:
        return None, score, True
    render_id = _chase(chips.votes(tile, plan))
    if render_id is None:
        return None, score, True
    angle = math.degrees(math.atan2(vector[1], vector[0]))
    return Detection(render_id, score, scale, angle), score, True


def _chase(votes: npt.NDArray[np.float64]) -> int | None:
    """The id whose bits pass the CRC, trying the hard decision and then every pattern of
    flips among the CHASE_BITS least reliable bits (Chase decoding): one or two weak bits are
    the usual damage after a downscale plus JPEG q50."""
    hard = (votes > 0).astype(np.uint8)
    weakest = np.argsort(np.abs(votes))[:CHASE_BITS]
    for pattern in range(1 << CHASE_BITS):
        bits = hard.copy()
        for position, index in enumerate(weakest):
            if pattern >> position & 1:
                bits[index] ^= 1
        render_id = layout.unpack(bits)
        if render_id is not None:
            return render_id
    return None

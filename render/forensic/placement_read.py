"""Reading the placement mark (`render.forensic.placement`) off a leak, blind: without the
viewer's text and without the copies' places, which a washed page does not give.

0. Only an image whose sides are the page's paper is read (`served.spans_width`): the field's
   cells are the page's, from its width, so a surround beside the page could only mislead.
1. The pattern's lattice, as a pair of autocorrelation peaks that spans the pattern's brick
   bond (`brick_lattice`): on every pixel dark enough to be measured (`_MEASURABLE`), else at
   the letters' likely levels (`_levels`: a wash may set the letters to one grey), refined on
   the vectors' multiples (`_refined`).
2. The copies' average at every pixel (`pattern_plane`): where each word would be if no word
   were moved.
3. The leak's offset against that average in windows over the letters' edges (WINDOW px a
   side, side by side, by half on a small leak, `_step`; those whose average shows too
   little contrast are skipped): the peak of their normalised correlation over +-REACH px, to
   a tenth of a pixel (a parabola). Windows whose peak is weak or on the search's edge are
   dropped.
4. Each window counted in the cell under its word's centre (`_word_centres`), the offsets
   summed per cell (`render.forensic_wire.evidence.Evidence`).

A served page, washed or rescaled, is read (the words' growth and the windows' step follow
the leak's size against the served canvas, `_scale`); a photo, a crop or a page on a desktop
is not. A whole page costs a worker about 0.2 s (`bench.leakmark_misses --placement`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import ink, pattern_model, served, sync
from render.forensic.pattern_plane import pattern_plane
from render.forensic.placement import cells
from render.forensic_wire.evidence import MIN_WINDOWS, Evidence

WINDOW = 20  # px a side of a measuring window
REACH = 3  # px looked for either way (2 lost a sixth of the evidence: the model is a blur)
_MIN_CONTRAST = 12.0  # the average's standard deviation in a window: letters' edges in it
# Letters this far under the paper at least: no levels between the two spread more than half
# their difference, so lighter ones cannot show _MIN_CONTRAST in a window. A raised tone's
# letters (18-24 under) were never measured in `bench.leakmark`'s leaks; reading them cost a
# miss 0.3 s.
_MEASURABLE = 2 * _MIN_CONTRAST
_MIN_MATCH = 0.6
_MIN_LAG = 60  # px: the pattern's lattice is longer at any scale read (0.3: 84 px)
_LETTER_DEPTH = 20  # grey levels under the paper: the model's letters (their ink: 55 under)
_WORD_GROWTH = 3  # px at the served size: a word's letters are 1-4 px apart, words 7 and more
_NEAR_PAPER = 13  # an ink level this close to the paper is JPEG's noise (decode.NEAR_PAPER)
_MAX_PIXELS = 12_000_000  # larger leaks are not read (a served page is 2 MP)
_SMALL = 0.75  # of the served canvas's long side: a leak this much smaller has windows by half
_CHUNK = 4096  # windows measured at once: about 20 MB of temporaries

Floats = npt.NDArray[np.float32]


def read(image: Image.Image, long_side: int = served.LONG_SIDE) -> Evidence | None:
    """The offsets the leak's words show, per cell; None when no pattern lattice shows.
    `long_side`: the deployment's `render.long_side` (a leak much smaller than the pages
    served is measured in windows overlapping by half, `_step`)."""
    found = read_with_model(image, long_side)
    return None if found is None else found[0]


def read_with_model(image: Image.Image, long_side: int = served.LONG_SIDE
                    ) -> tuple[Evidence, Floats, float] | None:
    """`read`'s evidence, with the copies' average it measured against and the leak's scale
    against the served canvas (`placement_date` reads the pattern's date off that average)."""
    if image.width * image.height > _MAX_PIXELS or min(image.size) < 8 * WINDOW:
        return None
    grey = image.convert("L")
    paper = ink.paper_level(grey)
    if paper is None or not served.spans_width(grey, paper):
        return None  # no paper, or a surround beside the page: its cells are not the image's
    values = np.asarray(grey, dtype=np.float32)
    letters = pattern_model.ink_autocorrelation(
        (values >= ink.ink_range(paper)[0] - ink.INK_BAND) & (values <= paper - _MEASURABLE))
    found = _lattice(grey, values, paper, letters)
    if found is None:
        return None
    lattice = _refined(letters, values.shape, found)
    # The model of every pixel lighter than the pattern's ink can be (not the level its lattice
    # was found at: a washed page's letters and their edges may sit apart), the page's own
    # darker text left out.
    lightest_ink = ink.ink_range(paper)[0] - ink.INK_BAND
    model = pattern_plane(values, values >= lightest_ink, lattice)
    offsets, centres = measured(255.0 - values, 255.0 - model, _step(image.size, long_side))
    if len(offsets) < MIN_WINDOWS:
        return None
    scale = _scale(image.size, long_side)
    at = _word_centres(model, paper, centres, scale)
    return Evidence.of(offsets, cells(at[:, 1], at[:, 0], float(image.width))), model, scale


def _word_centres(model: Floats, paper: int, centres: npt.NDArray[np.float64], scale: float
                  ) -> npt.NDArray[np.float64]:
    """Where each window's word is centred (row, column), its own centre when it is on no
    word: the field moved a whole word by its value under the centre of its box
    (`render.watermark.pattern.WordSpan`), and a window on a word's end often lies in the next cell.
    Words are the model's letters grown until a word's letters touch, not across the space
    between words: by _WORD_GROWTH px on a leak of the served size, fewer at `scale`."""
    # Imported here, not at the top: the server imports this module but never runs it, and the
    # render zygote preloads SciPy for the workers (`render.forensic.fft` says why).
    from scipy import ndimage

    letters = (model < paper - _LETTER_DEPTH).view(np.uint8)
    growth = max(1, int(_WORD_GROWTH * scale + 0.1))
    grown = ndimage.maximum_filter(letters, size=2 * growth + 1)
    words, count = ndimage.label(grown)
    if count == 0:
        return centres
    boxes = ndimage.find_objects(words)
    middle = np.array([[0.0, 0.0]] + [[(box[0].start + box[0].stop - 1) / 2,
                                       (box[1].start + box[1].stop - 1) / 2]
                                      for box in boxes])
    label = words[centres[:, 0].astype(np.intp), centres[:, 1].astype(np.intp)]
    found: npt.NDArray[np.float64] = np.where((label > 0)[:, None], middle[label], centres)
    return found


def _lattice(grey: Image.Image, values: Floats, paper: int, letters: Floats
             ) -> npt.NDArray[np.float64] | None:
    """The pattern's lattice: on `letters` (the autocorrelation of every pixel the pattern's
    measurable letters may cover), else at the first of `_levels` that shows one (a wash may
    set the letters to one grey, among the page's own text)."""
    found = brick_lattice(letters)
    if found is not None:
        return found
    tried: set[int] = set()
    for level in _levels(grey, paper):
        if not _measurable(paper, level) or any(
                abs(level - other) <= ink.INK_BAND / 2 for other in tried):
            continue
        tried.add(level)
        found = _lattice_at(values, level)
        if found is not None:
            return found
    return None


def _measurable(paper: int, level: int) -> bool:
    """Whether letters at `level` on `paper` can show _MIN_CONTRAST in a window."""
    return paper - level >= _MEASURABLE


def _refined(letters: Floats, shape: tuple[int, ...], lattice: npt.NDArray[np.float64]
             ) -> npt.NDArray[np.float64]:
    """The lattice's vectors to a tenth of a pixel: the peaks near their largest multiple
    that fits the image (up to 3x), on `letters`, the autocorrelation of every pixel the
    pattern's letters may cover (their cores and edges). A lattice found on a washed page's
    letter edges alone was a pixel off over the page's copies (measured: (-42.1, 321.2) for
    (-43.0, 322.7)), and blurred the model of the copies."""
    refined = []
    for vector in lattice:
        times = max(1, min(3, int(min(shape) / 2 / max(float(np.hypot(*vector)), 1.0))))
        x, y, _ = sync.peak(letters, (times * vector[0], times * vector[1]), 2)
        refined.append((x / times, y / times))
    return np.array(refined, dtype=np.float64)


def _levels(grey: Image.Image, paper: int) -> Iterator[int]:
    """Levels the pattern's letters may have, likeliest first: the decoder's (the commonest
    on the letters' edges); the commonest of all in the ink's range (a wash that sets the
    letters to one grey leaves them no edge inside)."""
    level = ink.ink_level(grey)
    if level is not None:
        yield level
    counts = np.asarray(grey.histogram(), dtype=np.int64)
    low = ink.ink_range(paper)[0]
    high = paper - _NEAR_PAPER - 1  # lighter is paper, or JPEG's noise on it
    if high >= low:
        yield low + int(np.argmax(counts[low: high + 1]))


def _lattice_at(values: Floats, level: int) -> npt.NDArray[np.float64] | None:
    # Every pixel at the ink's level, flat or not: a wash that sets the letters to one grey
    # makes their insides flat (`pattern_model.flat_areas`, meant for a screenshot's desktop).
    near = np.abs(values - level) <= ink.INK_BAND
    return brick_lattice(pattern_model.ink_autocorrelation(near))


def brick_lattice(acf: npt.NDArray[np.float32]) -> npt.NDArray[np.float64] | None:
    """The highest pair of the autocorrelation's peaks that spans the pattern's brick bond
    (`pattern_model.lattice_rotation` finds its rows in it). The decoder's `pattern_lattice`
    takes the highest pair that is not along a line; moved words lower the lattice's own
    peaks, and a peak of the pattern's lines repeating across copies (measured: (-20, 547) px
    for one viewer's text, in two pages of four) then came first."""
    peaks = pattern_model.local_maxima(acf, _MIN_LAG)
    vectors = [pattern_model.sub_pixel(acf, x, y) for x, y, _ in peaks]
    for i, first in enumerate(vectors):
        for second in vectors[i + 1:]:
            lattice = np.array([first, second], dtype=np.float64)
            if pattern_model.lattice_rotation(lattice) is not None:
                return lattice
    return None


def _scale(size: tuple[int, int], long_side: int) -> float:
    """The leak's size against the served canvas's (its long side's)."""
    return max(size) / served.canvas_long_side(long_side)


def _step(size: tuple[int, int], long_side: int) -> int:
    """Px between windows: side by side on a leak about the served size, by half on a
    smaller one. Measured on 8 pages washed to 35 dB (seed 3): windows overlapping by half
    named the view at z 7.8-10.2 at the served size, side by side 7.7-10.4, at a quarter of
    the cost; on served pages halved and saved at JPEG q50, side by side 0-12.1 (the two
    generated pages 0), by half 3.4-13.4."""
    return WINDOW // 2 if _scale(size, long_side) < _SMALL else WINDOW


def measured(image: Floats, average: Floats, step: int = WINDOW
             ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(offsets, centres): the (dx, dy) of `image` against `average` (ink planes, 255 - grey)
    of each kept window (WINDOW px a side, every `step` px, WINDOW or half of it) and its
    centre (row, column)."""
    contrast = _contrast(average, step)
    rows, columns = np.nonzero(contrast >= _MIN_CONTRAST)
    if len(rows) < MIN_WINDOWS:  # a pattern too faint to measure (a raised tone)
        return np.zeros((0, 2)), np.zeros((0, 2))
    tops, lefts = REACH + rows * step, REACH + columns * step
    offsets, centres = [np.zeros((0, 2))], [np.zeros((0, 2))]
    for start in range(0, len(tops), _CHUNK):  # bounded temporaries on a large leak
        found, at = _offsets(image, average, tops[start: start + _CHUNK],
                             lefts[start: start + _CHUNK])
        offsets.append(found)
        centres.append(at)
    return np.concatenate(offsets), np.concatenate(centres)


def _contrast(average: Floats, step: int) -> npt.NDArray[np.float64]:
    """The standard deviation of `average` in each window (row, column of windows), the
    windows every `step` px from (REACH, REACH), each REACH px or more inside the image: from
    sums over blocks of `step` px, a window spanning `per` of them each way."""
    per = WINDOW // step
    rows, columns = ((side - 2 * REACH - WINDOW) // step + 1 for side in average.shape)
    blocks_down, blocks_across = rows + per - 1, columns + per - 1
    plane = average[REACH: REACH + blocks_down * step, REACH: REACH + blocks_across * step]
    moments = []
    for power in (plane, plane * plane):
        blocks = power.reshape(blocks_down, step, blocks_across, step).sum(
            axis=(1, 3), dtype=np.float64)
        moments.append(sum(blocks[i: i + rows, j: j + columns]
                           for i in range(per) for j in range(per)) / (WINDOW * WINDOW))
    mean, square = moments
    spread: npt.NDArray[np.float64] = np.sqrt(np.maximum(square - mean * mean, 0.0))
    return spread


def _offsets(image: Floats, average: Floats, tops: npt.NDArray[np.intp],
             lefts: npt.NDArray[np.intp]
             ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each window's offset, as `measured` says."""
    side, area = 2 * REACH + 1, WINDOW * WINDOW
    templates = np.lib.stride_tricks.sliding_window_view(average, (WINDOW, WINDOW))[tops, lefts]
    centred = templates - templates.mean(axis=(1, 2), keepdims=True)
    norms = np.sqrt((centred * centred).sum(axis=(1, 2)))
    patches = np.lib.stride_tricks.sliding_window_view(
        image, (WINDOW + 2 * REACH, WINDOW + 2 * REACH))[tops - REACH, lefts - REACH]
    totals, energies = (_shifted_sums(power.astype(np.float64))
                        for power in (patches, patches * patches))
    scores = np.empty((len(tops), side, side), dtype=np.float32)
    for dy in range(side):
        for dx in range(side):
            window = patches[:, dy: dy + WINDOW, dx: dx + WINDOW]
            # The template is centred, so the window's own mean drops out of the product.
            product = np.einsum("kij,kij->k", window, centred)
            total, energy = totals[:, dy, dx], energies[:, dy, dx]
            spread = np.sqrt(np.maximum(energy - total * total / area, 0.0))
            scores[:, dy, dx] = product / (spread * norms + 1e-9)
    flat = scores.reshape(len(tops), -1)
    best = flat.argmax(axis=1)
    py, px = best // side, best % side
    inside = (py > 0) & (py < side - 1) & (px > 0) & (px < side - 1)
    good = inside & (flat[np.arange(len(best)), best] >= _MIN_MATCH)
    rows = np.nonzero(good)[0]
    py, px = py[good], px[good]
    dx = px - REACH + _vertex(scores[rows, py, px - 1], scores[rows, py, px],
                              scores[rows, py, px + 1])
    dy = py - REACH + _vertex(scores[rows, py - 1, px], scores[rows, py, px],
                              scores[rows, py + 1, px])
    centres = np.stack([tops[rows] + WINDOW // 2, lefts[rows] + WINDOW // 2], axis=1)
    return np.stack([dx, dy], axis=1).astype(np.float64), centres.astype(np.float64)


def _shifted_sums(patches: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each patch's sums over a window at every shift (patch, dy, dx): running sums down
    the rows, then across the columns of those bands."""
    side = 2 * REACH + 1
    down = np.zeros((patches.shape[0], patches.shape[1] + 1, patches.shape[2]))
    down[:, 1:] = patches.cumsum(axis=1)
    bands = down[:, WINDOW:] - down[:, :side]
    across = np.zeros((bands.shape[0], side, bands.shape[2] + 1))
    across[:, :, 1:] = bands.cumsum(axis=2)
    sums: npt.NDArray[np.float64] = across[:, :, WINDOW:] - across[:, :, :side]
    return sums


def _vertex(minus: Floats, centre: Floats, plus: Floats) -> npt.NDArray[np.float64]:
    """The parabola's vertex through three scores, within half a pixel of the middle one."""
    curve = (minus - 2 * centre + plus).astype(np.float64)
    safe = np.where(curve < 0, curve, -1.0)
    vertex = np.clip(0.5 * (minus - plus) / safe, -0.5, 0.5)
    found: npt.NDArray[np.float64] = np.where(curve < 0, vertex, 0.0)
    return found

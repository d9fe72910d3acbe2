"""Reading the placement mark (`render.forensic.placement`) off a leak, blind: without the
viewer's text and without the copies' places, which a washed page does not give.

0. Only an image whose sides are the page's paper is read (`served.spans_width`): the field's
   cells are the page's, from its width, so a surround beside the page could only mislead.
1. The pattern's lattice, found on the pixels at the letters' level (`_levels`: a wash may set
   the letters to any grey), as a pair of autocorrelation peaks that spans the pattern's brick
   bond (`brick_lattice`), refined on the vectors' multiples (`_refined`).
2. The copies' average at every pixel (`pattern_model.pattern_model`): where each word would
   be if no word were moved.
3. The leak's offset against that average in windows over the letters' edges (WINDOW px a
   side, every STEP px; those whose average shows too little contrast are skipped): the peak
   of their normalised correlation over +-REACH px, to a tenth of a pixel (a parabola).
   Windows whose peak is weak or on the search's edge are dropped.
4. Each window counted in the cell under its word's centre (`_word_centres`), the offsets
   summed per cell (`placement.Evidence`).

A served page, washed or rescaled, is read; a photo, a crop or a page on a desktop is not.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from PIL import Image
from scipy import ndimage

from render.forensic import ink, pattern_model, served, sync
from render.forensic.placement import Evidence, cells

WINDOW = 20  # px a side of a measuring window
STEP = WINDOW // 2  # px between windows (`_contrast` counts on the half)
REACH = 3  # px looked for either way (2 lost a sixth of the evidence: the model is a blur)
_MIN_CONTRAST = 12.0  # the average's standard deviation in a window: letters' edges in it
_MIN_MATCH = 0.6
MIN_WINDOWS = 200  # fewer windows to measure: too little pattern to name a view
_MIN_LAG = 60  # px: the pattern's lattice is longer at any scale read (0.3: 84 px)
_LETTER_DEPTH = 20  # grey levels under the paper: the model's letters (their ink: 55 under)
_WORD_GROWTH = 3  # px: letters of a word are 1-4 px apart, words 7 px and more (at 0.3: 2)
_NEAR_PAPER = 13  # an ink level this close to the paper is JPEG's noise (decode.NEAR_PAPER)
_MAX_PIXELS = 12_000_000  # larger leaks are not read (a served page is 2 MP)
_CHUNK = 4096  # windows measured at once: about 20 MB of temporaries

Floats = npt.NDArray[np.float32]


def read(image: Image.Image) -> Evidence | None:
    """The offsets the leak's words show, per cell; None when no pattern lattice shows."""
    if image.width * image.height > _MAX_PIXELS or min(image.size) < 8 * WINDOW:
        return None
    grey = image.convert("L")
    paper = ink.paper_level(grey)
    if paper is None or not served.spans_width(grey, paper):
        return None  # no paper, or a surround beside the page: its cells are not the image's
    values = np.asarray(grey, dtype=np.float32)
    found = _lattice(grey, values, paper)
    if found is None:
        return None
    lattice = _refined(values, paper, found)
    # The model of every pixel lighter than the pattern's ink can be (not the level its lattice
    # was found at: a washed page's letters and their edges may sit apart), the page's own
    # darker text left out.
    lightest_ink = ink.ink_range(paper)[0] - ink.INK_BAND
    model = pattern_model.pattern_model(values, values >= lightest_ink, lattice,
                                        np.ones(values.shape, dtype=bool)).reshape(values.shape)
    offsets, centres = measured(255.0 - values, 255.0 - model.astype(np.float32))
    if len(offsets) < MIN_WINDOWS:
        return None
    at = _word_centres(model, paper, centres)
    return Evidence.of(offsets, cells(at[:, 1], at[:, 0], float(image.width)))


def _word_centres(model: Floats, paper: int, centres: npt.NDArray[np.float64]
                  ) -> npt.NDArray[np.float64]:
    """Where each window's word is centred (row, column), its own centre when it is on no
    word: the field moved a whole word by its value under the word's centre, and a window
    on a word's end often lies in the next cell. Words are the model's letters grown until
    a word's letters touch, not across the space between words."""
    letters = model < paper - _LETTER_DEPTH
    words, count = ndimage.label(ndimage.binary_dilation(letters, iterations=_WORD_GROWTH))
    if count == 0:
        return centres
    rows, columns = np.indices(words.shape)
    sizes = np.bincount(words.ravel(), minlength=count + 1).astype(np.float64)
    middle = np.stack([np.bincount(words.ravel(), rows.ravel(), count + 1),
                       np.bincount(words.ravel(), columns.ravel(), count + 1)],
                      axis=1).astype(np.float64) / np.maximum(sizes, 1.0)[:, None]
    label = words[centres[:, 0].astype(np.intp), centres[:, 1].astype(np.intp)]
    found: npt.NDArray[np.float64] = np.where((label > 0)[:, None], middle[label], centres)
    return found


def _lattice(grey: Image.Image, values: Floats, paper: int) -> npt.NDArray[np.float64] | None:
    """The pattern's lattice, found at the first of `_levels` that shows one."""
    tried: set[int] = set()
    for level in _levels(grey, paper):
        if any(abs(level - other) <= ink.INK_BAND / 2 for other in tried):
            continue
        tried.add(level)
        lattice = _lattice_at(values, paper, level)
        if lattice is not None:
            return lattice
    return None


def _refined(values: Floats, paper: int, lattice: npt.NDArray[np.float64]
             ) -> npt.NDArray[np.float64]:
    """The lattice's vectors to a tenth of a pixel: the peaks near their largest multiple
    that fits the image (up to 3x), on the autocorrelation of every pixel the pattern's
    letters may cover (their cores and edges). A lattice found on a washed page's letter
    edges alone was a pixel off over the page's copies (measured: (-42.1, 321.2) for
    (-43.0, 322.7)), and blurred the model of the copies."""
    letters = (values >= ink.ink_range(paper)[0] - ink.INK_BAND) & (values < paper - _NEAR_PAPER)
    acf = pattern_model.ink_autocorrelation(letters)
    refined = []
    for vector in lattice:
        times = max(1, min(3, int(min(values.shape) / 2 / max(float(np.hypot(*vector)), 1.0))))
        x, y, _ = sync.peak(acf, (times * vector[0], times * vector[1]), 2)
        refined.append((x / times, y / times))
    return np.array(refined, dtype=np.float64)


def _levels(grey: Image.Image, paper: int) -> Iterator[int]:
    """Levels the pattern's letters may have, likeliest first: the decoder's (the commonest
    on the letters' edges); the commonest of all in the ink's range (a wash that sets the
    letters to one grey leaves them no edge inside); those the pattern's lattice shows (a
    reduced page's letters smeared toward the paper), the dearest to find, last."""
    level = ink.ink_level(grey)
    if level is not None:
        yield level
    counts = np.asarray(grey.histogram(), dtype=np.int64)
    low = ink.ink_range(paper)[0]
    high = paper - _NEAR_PAPER - 1  # lighter is paper, or JPEG's noise on it
    if high >= low:
        yield low + int(np.argmax(counts[low: high + 1]))
    yield from pattern_model.lattice_ink_levels(grey).levels


def _lattice_at(values: Floats, paper: int, level: int) -> npt.NDArray[np.float64] | None:
    if level >= paper - _NEAR_PAPER:
        return None
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


def measured(image: Floats, average: Floats) -> tuple[npt.NDArray[np.float64],
                                                      npt.NDArray[np.float64]]:
    """(offsets, centres): each kept window's (dx, dy) of `image` against `average` (ink
    planes, 255 - grey) and its centre (row, column)."""
    height, width = image.shape
    tops = np.arange(REACH, height - WINDOW - REACH, STEP)
    lefts = np.arange(REACH, width - WINDOW - REACH, STEP)
    grid_t, grid_l = (a.ravel() for a in np.meshgrid(tops, lefts, indexing="ij"))
    keep = _contrast(average, grid_t, grid_l) >= _MIN_CONTRAST
    grid_t, grid_l = grid_t[keep], grid_l[keep]
    if len(grid_t) < MIN_WINDOWS:  # a pattern too faint to measure (a raised tone)
        return np.zeros((0, 2)), np.zeros((0, 2))
    offsets, centres = [np.zeros((0, 2))], [np.zeros((0, 2))]
    sums = _summed(image), _summed(image * image)
    for start in range(0, len(grid_t), _CHUNK):  # bounded temporaries on a large leak
        found, at = _offsets(image, average, sums, grid_t[start: start + _CHUNK],
                             grid_l[start: start + _CHUNK])
        offsets.append(found)
        centres.append(at)
    return np.concatenate(offsets), np.concatenate(centres)


def _contrast(average: Floats, tops: npt.NDArray[np.intp], lefts: npt.NDArray[np.intp]
              ) -> npt.NDArray[np.float64]:
    """The standard deviation of `average` in each window, from sums over STEP-px blocks (a
    window is 2 x 2 of them: the windows start every STEP px, WINDOW = 2 x STEP)."""
    rows, columns = ((side - REACH) // STEP for side in average.shape)
    plane = average[REACH: REACH + rows * STEP, REACH: REACH + columns * STEP].astype(np.float64)
    row, column = (tops - REACH) // STEP, (lefts - REACH) // STEP
    moments = []
    for power in (plane, plane * plane):
        blocks = power.reshape(rows, STEP, columns, STEP).sum(axis=(1, 3))
        windows = blocks[:-1, :-1] + blocks[1:, :-1] + blocks[:-1, 1:] + blocks[1:, 1:]
        moments.append(windows[row, column] / (WINDOW * WINDOW))
    mean, square = moments
    spread: npt.NDArray[np.float64] = np.sqrt(np.maximum(square - mean * mean, 0.0))
    return spread


def _summed(plane: Floats) -> npt.NDArray[np.float64]:
    """The summed-area table of `plane`, a row and a column of zeros first."""
    table = np.zeros((plane.shape[0] + 1, plane.shape[1] + 1))
    table[1:, 1:] = plane.astype(np.float64).cumsum(axis=0).cumsum(axis=1)
    return table


def _window_sums(table: npt.NDArray[np.float64], tops: npt.NDArray[np.intp],
                 lefts: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    bottoms, rights = tops + WINDOW, lefts + WINDOW
    found: npt.NDArray[np.float64] = (table[bottoms, rights] - table[tops, rights]
                                      - table[bottoms, lefts] + table[tops, lefts])
    return found


def _offsets(image: Floats, average: Floats,
             sums: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
             tops: npt.NDArray[np.intp], lefts: npt.NDArray[np.intp]
             ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each window's offset, as `measured` says; `sums`: the summed-area tables of the image
    and of its square (a window's mean and energy at every shift, without summing it)."""
    side = 2 * REACH + 1
    templates = np.lib.stride_tricks.sliding_window_view(average, (WINDOW, WINDOW))[tops, lefts]
    centred = templates - templates.mean(axis=(1, 2), keepdims=True)
    norms = np.sqrt((centred * centred).sum(axis=(1, 2)))
    patches = np.lib.stride_tricks.sliding_window_view(
        image, (WINDOW + 2 * REACH, WINDOW + 2 * REACH))[tops - REACH, lefts - REACH]
    scores = np.empty((len(tops), side, side), dtype=np.float32)
    area = WINDOW * WINDOW
    for dy in range(side):
        for dx in range(side):
            window = patches[:, dy: dy + WINDOW, dx: dx + WINDOW]
            # The template is centred, so the window's own mean drops out of the product.
            product = np.einsum("kij,kij->k", window, centred)
            at_top, at_left = tops + dy - REACH, lefts + dx - REACH
            total = _window_sums(sums[0], at_top, at_left)
            energy = _window_sums(sums[1], at_top, at_left)
            spread = np.sqrt(np.maximum(energy - total * total / area, 0.0))
            scores[:, dy, dx] = product / (spread * norms + 1e-9)
    table = scores.reshape(len(tops), -1)
    best = table.argmax(axis=1)
    py, px = best // side, best % side
    inside = (py > 0) & (py < side - 1) & (px > 0) & (px < side - 1)
    good = inside & (table[np.arange(len(best)), best] >= _MIN_MATCH)
    rows = np.nonzero(good)[0]
    py, px = py[good], px[good]
    dx = px - REACH + _vertex(scores[rows, py, px - 1], scores[rows, py, px],
                              scores[rows, py, px + 1])
    dy = py - REACH + _vertex(scores[rows, py - 1, px], scores[rows, py, px],
                              scores[rows, py + 1, px])
    centres = np.stack([tops[rows] + WINDOW // 2, lefts[rows] + WINDOW // 2], axis=1)
    return np.stack([dx, dy], axis=1).astype(np.float64), centres.astype(np.float64)


def _vertex(minus: Floats, centre: Floats, plus: Floats) -> npt.NDArray[np.float64]:
    """The parabola's vertex through three scores, within half a pixel of the middle one."""
    curve = (minus - 2 * centre + plus).astype(np.float64)
    safe = np.where(curve < 0, curve, -1.0)
    vertex = np.clip(0.5 * (minus - plus) / safe, -0.5, 0.5)
    found: npt.NDArray[np.float64] = np.where(curve < 0, vertex, 0.0)
    return found

"""The visible pattern, modelled and subtracted: what is left of a clipped page is the mark.

When brightness or contrast was raised, the mark survives only in the visible pattern's ink
(`render.forensic.ink`). Its letters repeat on a brick lattice (`render.watermark.pattern.lattice`),
and their edges dominate any reading of that ink: the autocorrelation shows the pattern's lattice,
not the mark's. Here the lattice is found (the strongest autocorrelation peaks of the ink
pixels), every copy of the pattern tile is averaged into one (the mark's 192-px period is
incommensurate with the pattern's, so it averages out) and that model is subtracted: the
residual on the ink pixels is the mark times the ink's level, plus noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import numpy.ma  # loaded now: np.quantile imports it lazily; a confined worker may not read it
import numpy.typing as npt
from PIL import Image, ImageFilter

from render.forensic import sync
from render.forensic.ink import INK_BAND, ink_range, near_paper, paper_level
from render.forensic.lattice_cell import bands, cell_average, interpolated

Floats = npt.NDArray[np.float32]
Points = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]
_MIN_LAG = 25  # px: shorter autocorrelation peaks are the letters' own strokes
_PEAKS = 12
_TESTED = 4096  # highest autocorrelation points tested as local maxima first
_SECOND_PEAK = 0.5  # the second lattice vector's peak, at least this share of the first's
# The pattern's brick bond is looked for among this many peaks, down to this share of the
# highest: the letters' lines repeat around each lattice point and crowd the highest peaks
# (measured: the lattice's second vector 22nd of them, at 0.50-0.52 of the highest, on a
# page raised in contrast for one viewer's text). A brick bond is a strict test (rows and
# a perpendicular within half a degree) that chance pairs seldom pass, and a wrong lattice
# still has to fit the ink (`_FITTED_SHARE`).
_BRICK_PEAKS = 40
_BRICK_PEAK = 0.35
_SHORTEST = 0.5  # the second lattice vector, at least this share of the first's length
_NOT_COLLINEAR = 0.3  # |sin| of the angle between the two lattice vectors, at least
_MIN_POINTS = 500
# The pattern's model fits at least this share of the ink pixels when its lattice is right
# (29 % and more measured, on the photograph page raised in contrast, whose mid-greys are most
# of them); a lattice of letters along one line fitted 1-8 %.
_FITTED_SHARE = 0.15
_FLAT_REACH = 3
_SMEARED_MIN_LAG = 60  # px: the pattern's shorter lattice vector at the smallest scale, 0.3
_SMEARED_INK_GAP = 10
# Quantiles of the modelled letters' levels tried as the ink level, in turn: the letters'
# edges, more numerous than their cores, pull the commonest level towards the paper (239 for an
# ink of 232-236 once); on a page shrunk to half, whose 2-px strokes are mostly edge, the cores
# are rarer still (ink near 190 read at 0.25 as 200-207, at 0.05 as 190-198).
_INK_QUANTILES = (0.25, 0.05)
# On a served page the lattice's first vector (`render.watermark.pattern.lattice`) lies at -30
# degrees; a leak rotated by up to this much is read at the angle that brings it back there.
_PATTERN_ANGLE = -30.0
_MAX_ROTATION = 8.0
# The pattern's copies are laid in a brick bond (`render.watermark.pattern.lattice`): some lattice
# vector less half the row vector is perpendicular to it. Measured: within 0.1 degree on the
# pattern's lattice, leaks turned by 2 degrees included; 31-40 degrees off on the lattices JPEG's
# noise showed at a wrong ink level, whose "rotation" (1.5-4 degrees) cost a scan at that angle.
_BRICK_TOLERANCE = 0.5  # degrees


Lattice = npt.NDArray[np.float64]  # two vectors (rows: dx, dy) spanning the pattern's lattice


class InkReading(NamedTuple):
    points: Points
    rotation: float | None  # degrees, the mark's x axis in the image, from the pattern's lattice
    lattice: Lattice | None  # the pattern's, when its model fitted the ink


class LatticeLevels(NamedTuple):
    levels: list[int]  # likeliest first
    lattice: Lattice | None  # the lattice they were read through


def local_maxima(acf: Floats, min_lag: int, count: int = _PEAKS,
                 ) -> list[tuple[int, int, float]]:
    """The highest local maxima (dx, dy, height) of `acf` at lags of `min_lag` or more, one
    half plane (the autocorrelation is symmetric): a point no lower than any within 2 px.
    The highest points are tested first (a max filter costs 24 passes over the plane); the
    whole plane only when they hold too few maxima (a flat desktop's plateau)."""
    height, width = acf.shape
    # The candidates: the half plane of lags dy >= 0 (its first rows), without the lags
    # under min_lag around the origin (the central lobe, the highest points of all).
    half = acf[: height - height // 2].copy()
    near_y = np.arange(min(min_lag, len(half)))[:, None]
    reach = min(min_lag, width)
    for columns in (np.arange(reach), np.arange(width - reach, width)):
        dx = (columns + width // 2) % width - width // 2
        inside = np.hypot(dx[None, :], near_y) < min_lag
        block = half[: len(near_y), columns]
        block[inside] = -np.inf
        half[: len(near_y), columns] = block
    half[0, width - width // 2:] = -np.inf  # dy = 0: the lags dx > 0 only
    half[0, 0] = -np.inf
    flat = half.ravel()
    tested = min(_TESTED, flat.size)
    top = np.argpartition(flat, -tested)[-tested:]
    top = top[np.isfinite(flat[top])]
    ys, xs = top // width, top % width
    values = flat[top]
    peak = np.ones(len(ys), dtype=bool)
    # Each neighbour's row and column wrapped once, not once a neighbour (24 of them).
    plane = acf.ravel()
    starts = [(ys + oy) % height * width for oy in range(-2, 3)]
    wrapped_xs = [(xs + ox) % width for ox in range(-2, 3)]
    for oy in range(5):
        for ox in range(5):
            if (oy, ox) != (2, 2):
                peak &= values >= plane.take(starts[oy] + wrapped_xs[ox])
    # Lags, as from the plane's centre.
    dy = (ys + height // 2) % height - height // 2
    dx = (xs + width // 2) % width - width // 2
    if peak.sum() < count and flat.size > tested:
        return _local_maxima_everywhere(acf, min_lag, count)
    values = values[peak]
    order = np.argsort(values)[::-1][:count]
    # The peaks' lags picked out once (a mask over the tested points a peak was a fifth of
    # the framed reading's flattened copies' peak finding, at its 48 peaks a copy).
    across, down = dx[peak][order].tolist(), dy[peak][order].tolist()
    return [(x, y, float(values[k])) for x, y, k in zip(across, down, order, strict=True)]


def _local_maxima_everywhere(acf: Floats, min_lag: int, count: int,
                             ) -> list[tuple[int, int, float]]:
    """`local_maxima` through a max filter over the whole plane."""
    centred = np.roll(acf, (acf.shape[0] // 2, acf.shape[1] // 2), axis=(0, 1))  # fftshift
    neighbourhood = centred.copy()
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            np.maximum(neighbourhood, np.roll(centred, (dy, dx), axis=(0, 1)), out=neighbourhood)
    height, width = centred.shape
    ys, xs = np.nonzero(centred == neighbourhood)
    dy, dx = ys - height // 2, xs - width // 2
    keep = (np.hypot(dx, dy) >= min_lag) & ((dy > 0) | ((dy == 0) & (dx > 0)))
    values = centred[ys[keep], xs[keep]]
    order = np.argsort(values)[::-1][:count]
    return [(int(dx[keep][k]), int(dy[keep][k]), float(values[k])) for k in order]


def sub_pixel(acf: Floats, x: int, y: int) -> tuple[float, float]:
    height, width = acf.shape

    def at(dx: int, dy: int) -> float:
        return float(acf[(y + dy) % height, (x + dx) % width])

    def offset(minus: float, centre: float, plus: float) -> float:
        bend = minus - 2 * centre + plus
        return 0.0 if bend >= 0 else 0.5 * (minus - plus) / bend

    centre = at(0, 0)
    return (x + offset(at(-1, 0), centre, at(1, 0)), y + offset(at(0, -1), centre, at(0, 1)))


def pattern_lattice(acf: Floats, min_lag: int = _MIN_LAG) -> Lattice | None:
    """Two vectors (rows: dx, dy) spanning the lattice the ink pixels repeat on, or None, from
    their `ink_autocorrelation` (made once for every `min_lag` a reading tries)."""
    candidates = local_maxima(acf, min_lag, _BRICK_PEAKS)
    if len(candidates) < 2:
        return None
    brick = _brick_pair(acf, [p for p in candidates if p[2] >= _BRICK_PEAK * candidates[0][2]])
    if brick is not None:
        return brick
    peaks = candidates[:_PEAKS]
    first = peaks[0]
    for second in peaks[1:]:
        if second[2] < _SECOND_PEAK * first[2]:
            return None
        length = math.hypot(*second[:2])
        if length < _SHORTEST * math.hypot(*first[:2]):
            continue  # letters repeating along a line of the pattern, not its lattice
        cross = first[0] * second[1] - first[1] * second[0]
        if abs(cross) > _NOT_COLLINEAR * math.hypot(*first[:2]) * length:
            return np.array([sub_pixel(acf, first[0], first[1]),
                             sub_pixel(acf, second[0], second[1])], dtype=np.float64)
    return None


def _brick_pair(acf: Floats, peaks: list[tuple[int, int, float]]) -> Lattice | None:
    """The highest pair of `peaks` that spans the pattern's brick bond (`lattice_rotation`
    finds its rows in it), or None. The highest pair not along a line is not always the
    lattice: the pattern's lines repeating across copies make peaks of their own, and for
    some viewers' texts one of them outranks the lattice's second vector (measured: (-20,
    547) px against the lattice's (-119, 367) on a page raised in contrast, the model then
    fitting 1,855 ink pixels instead of 12,614, and the mark missed)."""
    vectors = [sub_pixel(acf, x, y) for x, y, _ in peaks]
    for i, first in enumerate(vectors):
        for second in vectors[i + 1:]:
            lattice = np.array([first, second], dtype=np.float64)
            if lattice_rotation(lattice) is not None:
                return lattice
    return None


def ink_autocorrelation(ink: npt.NDArray[np.bool_]) -> Floats:
    """The autocorrelation of the ink pixels (a mask), what `pattern_lattice` reads."""
    return sync.autocorrelation((ink - ink.mean()).astype(np.float32))


def lattice_rotation(lattice: npt.NDArray[np.float64]) -> float | None:
    """The rotation of the page, in degrees (the direction of the mark's x axis), read off the
    pattern's lattice: the lattice vector nearest the direction of the pattern's rows.

    The other lattice vectors depend on the viewer's text (the block's size), that one only on
    the pattern's angle. None when no lattice vector lies within _MAX_ROTATION of it, or the
    lattice is not the pattern's brick bond (`_brick_rows`).
    """
    u, v = lattice[0], lattice[1]
    vectors = (u, v, u + v, u - v)
    best: float | None = None
    for k, vector in enumerate(vectors):
        direction = math.degrees(math.atan2(vector[1], vector[0]))
        rotation = (direction - _PATTERN_ANGLE + 90.0) % 180.0 - 90.0  # a vector's sign is free
        if (abs(rotation) <= _MAX_ROTATION and (best is None or abs(rotation) < abs(best))
                and _brick_rows(vector, vectors[:k] + vectors[k + 1:])):
            best = rotation
    return best


def _brick_rows(row: npt.NDArray[np.float64], others: tuple[npt.NDArray[np.float64], ...],
                ) -> bool:
    """Whether one of `others`, less or plus half of `row`, is perpendicular to it within
    _BRICK_TOLERANCE: the pattern's brick bond, which `row` is the rows of."""
    length = float(np.hypot(*row))
    for other in others:
        for across in (other - row / 2, other + row / 2):
            sine = abs(float(row[0] * across[1] - row[1] * across[0])) / max(
                length * float(np.hypot(*across)), 1e-9)
            if sine >= math.cos(math.radians(_BRICK_TOLERANCE)):
                return True
    return False


def pattern_model(values: Floats, weight: npt.NDArray[np.bool_],
                  lattice: npt.NDArray[np.float64], wanted: npt.NDArray[np.bool_]) -> Floats:
    """At the `wanted` pixels (row-major order), the value predicted by the average of
    their copies on `lattice`, over the pixels where `weight` holds (the page's own text left
    out)."""
    cell, inverse = cell_average(values, weight, lattice)
    cells = (cell.shape[0], cell.shape[1])
    models = [interpolated(cell, cells, inverse, ys, xs) for ys, xs in bands(wanted)]
    result: Floats = np.concatenate(models) if models else np.zeros(0, dtype=np.float32)
    return result


def flat_areas(grey: Image.Image) -> npt.NDArray[np.bool_]:
    """Pixels inside an area of one level (a screenshot's desktop): ink never is."""
    values = np.asarray(grey, dtype=np.int16)
    changes = np.zeros(values.shape, dtype=np.uint8)
    changes[:-1, :] |= (values[:-1, :] != values[1:, :]).astype(np.uint8)
    changes[:, :-1] |= (values[:, :-1] != values[:, 1:]).astype(np.uint8)
    spread = Image.fromarray(changes * 255, mode="L").filter(ImageFilter.BoxBlur(_FLAT_REACH))
    flat: npt.NDArray[np.bool_] = np.asarray(spread) == 0
    return flat


def ink_points(grey: Image.Image, level: int, flat: npt.NDArray[np.bool_] | None = None,
               known: Lattice | None = None) -> InkReading | None:
    """The mark's reading on the ink pixels: (rows, columns, values), positions relative to the
    image's centre, with the visible pattern subtracted when its lattice is found (which also
    gives the page's rotation). `flat`: `flat_areas(grey)`, when the caller has it already.
    `known`: the pattern's lattice as an earlier reading of this image found it, tried first:
    the ink's autocorrelation (about half this reading's time) is then made only when its model
    fits too few of the ink pixels."""
    values = np.asarray(grey, dtype=np.float32)
    flat = flat_areas(grey) if flat is None else flat
    near = (np.abs(values - level) <= INK_BAND) & ~flat
    rotation = None
    ys, xs = np.nonzero(near)
    found = values[ys, xs].astype(np.float64) - level
    # Letters repeating along a line of the pattern (26 px apart, seen on a photograph page
    # turned by -2 degrees) can pass for its lattice; then the model fits few of the ink
    # pixels, and the lattice is looked for again among the longer lags only. The better fit
    # is kept.
    best: tuple[int, Lattice, Floats, npt.NDArray[np.bool_]] | None = None
    for tried in _lattices(near, known):
        # Pixels darker than the ink (the page's own text) are left out of the model.
        model = pattern_model(values, values >= level - INK_BAND, tried, near)
        on_pattern = np.abs(model - level) <= INK_BAND
        fitted = int(on_pattern.sum())
        if best is None or fitted > best[0]:
            best = (fitted, tried, model, on_pattern)
        if fitted >= _FITTED_SHARE * len(ys):
            break
    lattice: Lattice | None = None
    if best is not None and best[0] >= _MIN_POINTS:  # else no lattice was the pattern's
        _, lattice, model, on_pattern = best
        rotation = lattice_rotation(lattice)
        ys, xs = ys[on_pattern], xs[on_pattern]
        found = (values[ys, xs] - model[on_pattern]).astype(np.float64)
    if len(ys) == 0:
        return None
    found -= found.mean()
    height, width = values.shape
    return InkReading((ys - height / 2.0, xs - width / 2.0, found), rotation, lattice)


def _lattices(ink: npt.NDArray[np.bool_], known: Lattice | None) -> Iterator[Lattice]:
    """The lattices `ink_points` tries, in turn: `known`, then those of the ink's
    autocorrelation (made only if asked for), at the shortest lags and the longer ones."""
    if known is not None:
        yield known
    acf = ink_autocorrelation(ink)
    for min_lag in (_MIN_LAG, _SMEARED_MIN_LAG):
        lattice = pattern_lattice(acf, min_lag)
        if lattice is not None:
            yield lattice


def lattice_ink_levels(grey: Image.Image, flat: npt.NDArray[np.bool_] | None = None,
                       known: Lattice | None = None) -> LatticeLevels:
    """The visible pattern's ink level read through its lattice, for images where the
    histogram shows no ink peak (JPEG q50 after a raised tone smears the letters' 3-4 px
    strokes into every level between ink and paper): the lattice of every pixel between the
    two, the pattern modelled on it, and low quantiles of the model's levels there (each cell
    averages every copy of the letter, so JPEG's noise and the mark average out), likeliest
    first; none when the image shows no such lattice. `known`: the pattern's lattice as a
    reading of this image found it (`ink_points`), used instead of looking for it again."""
    paper = paper_level(grey)
    if paper is None:
        return LatticeLevels([], None)
    low, high = ink_range(paper)
    values = np.asarray(grey, dtype=np.float32)
    on_paper = near_paper(grey, paper)  # not a photograph's mid-greys
    flat = flat_areas(grey) if flat is None else flat
    between = (values >= low) & (values <= paper - _SMEARED_INK_GAP) & ~flat
    # Smeared letters repeat along their lines more clearly than the pattern does: only lags
    # the lattice has at any scale searched (its shorter vector: about 280 px served).
    lattice = known if known is not None else pattern_lattice(
        ink_autocorrelation(between & on_paper), _SMEARED_MIN_LAG)
    if lattice is None:
        return LatticeLevels([], None)
    model = pattern_model(values, (values >= low) & on_paper, lattice, between & on_paper)
    inked = model[(model >= low) & (model <= high)]
    if len(inked) == 0:
        return LatticeLevels([], lattice)
    return LatticeLevels([round(float(level)) for level in np.quantile(inked, _INK_QUANTILES)],
                         lattice)

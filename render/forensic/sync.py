"""Finding the tile lattice in a leaked image: its scale, its rotation (Kutter 1998).

The mark repeats every TILE pixels, so the autocorrelation of the image's high-pass residual has
peaks on the lattice of tile vectors whatever the crop, offset or content; the peak nearest the
horizontal axis gives the horizontal tile vector (length TILE x scale, angle = rotation). Its
second and third harmonics sharpen the estimate: an error of a fraction of a pixel in the tile
vector adds up over the dozen tiles the decoder folds together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter
from scipy import ndimage

from render.forensic import fft
from render.forensic.layout import TILE

Floats = npt.NDArray[np.float32]
LEVELS = 48  # steps a unit of `weighted_residual` in `residual_levels`
# `weighted_residual`: the residual's energy summed over this window (px a side) and this floor
# (grey levels squared, about the energy of JPEG's and WebP's noise on paper) under it. A pixel
# then weighs 5 / (2 sqrt(2)) = 1.8 at most (where its residual is 5 sqrt(2) and its
# neighbours' nothing): 85 steps of LEVELS.
_ENERGY_WINDOW = 5
_ENERGY_FLOOR = 2.0
MIN_SCALE, MAX_SCALE = 0.3, 1.8
# Scales under MIN_SCALE down to this are searched too, after the others' candidates and only
# where the image's autocorrelation is made at full size (its long side _MAX_ACF_SIDE or less):
# chips of 1.6-2.4 px still show there, halved they would not (docs/leak-tracing.md, "Small
# leaks").
SMALL_SCALE = 0.2
MAX_ANGLE = math.radians(8)
BUSY = 6.0  # grey levels of detail above which a pixel is page content, not mark
_BUSY_REACH = 2  # and its neighbours within 2 px too
_MAX_ACF_SIDE = 2048  # larger images are halved first (the chips stay over 4 px)
# A residual left on fewer of the pixels than this holds no lattice worth a fold: the paper was
# clipped to white (brightness or contrast raised) and only the page's busy text is left.
# Measured: every marked leak the search read kept 1.8 % or more (crops to a fifth of a 640 px
# page included); pages brightened by 20 % keep 0.06-0.3 %, and cost the search 0.2-0.35 s
# for nothing.
MIN_RESIDUAL_SHARE = 0.005


def residual(grey: Image.Image, radius: float) -> Floats:
    """The image minus its local mean, with page content silenced: near any strong detail
    (text strokes, edges, JPEG ringing around them) it is set to 0, so mostly flat paper and
    gentle shading speak, where the chips are all there is."""
    return _detail(grey, radius).astype(np.float32)


def residual_levels(grey: Image.Image, radius: float) -> Image.Image:
    """The weighted residual (`weighted_residual`) as 8-bit levels, LEVELS steps a unit
    around 128: what the decoder resamples (Pillow's 8-bit affine transform is several times
    faster than its float one, and the weighted residual is within +-1.8)."""
    levels = np.rint(weighted_residual(grey, radius) * np.float32(LEVELS)) + np.float32(128)
    return Image.fromarray(np.clip(levels, 0, 255).astype(np.uint8), mode="L")


def weighted_residual(grey: Image.Image, radius: float) -> Floats:
    """The image minus its local mean (a Gaussian of `radius`, in floats), each pixel divided
    by the residual's energy around it plus a floor (a matched filter for a faint mark under
    noise that changes from place to place): flat paper speaks in full, a letter's edge a
    hundredth as loud, and no pixel is silenced outright. WebP smooths the mark off flat paper
    and keeps it on the pixels around the text (`residual` zeroes those): a screen-grab at 0.41
    saved at WebP q66 folds at 2.5 standard deviations through `residual` at its true
    geometry and offset, 6.6 through this (docs/leak-tracing.md, "Small leaks"). The local
    mean in floats because WebP leaves the mark at half a grey level on paper, which a mean
    rounded to whole levels loses."""
    values = np.asarray(grey, dtype=np.float32)
    detail = values - ndimage.gaussian_filter(values, radius, truncate=2.5)
    energy = ndimage.uniform_filter(detail * detail, _ENERGY_WINDOW)
    weighted: Floats = detail / (energy + _ENERGY_FLOOR)
    return weighted


def _detail(grey: Image.Image, radius: float) -> npt.NDArray[np.int16]:
    # Whole grey levels (both terms are 8-bit), so 16-bit integers hold them exactly: half the
    # memory traffic of floats, the same values.
    blurred = np.asarray(grey.filter(ImageFilter.BoxBlur(radius)), dtype=np.int16)
    detail = np.asarray(grey, dtype=np.int16) - blurred
    detail[_dilated(np.abs(detail) > BUSY, _BUSY_REACH)] = 0
    return detail


def _dilated(mask: npt.NDArray[np.bool_], reach: int) -> npt.NDArray[np.bool_]:
    """`mask` grown by `reach` px each way (a square): shifted copies OR-ed along each axis in
    turn. The same pixels as a box blur of the mask then > 0, a quarter of the time (a rank
    filter costs ten times more)."""
    grown = mask.copy()
    for shift in range(1, reach + 1):
        grown[:, shift:] |= mask[:, :-shift]
        grown[:, :-shift] |= mask[:, shift:]
    rows = grown.copy()
    for shift in range(1, reach + 1):
        grown[shift:] |= rows[:-shift]
        grown[:-shift] |= rows[shift:]
    return grown


def read_at_full_size(grey: Image.Image) -> bool:
    """Whether `grey`'s autocorrelation is made at its own size (not halved), where scales
    under MIN_SCALE, down to SMALL_SCALE, are read too."""
    return max(grey.size) <= _MAX_ACF_SIDE


def _smooth_size(n: int) -> int:
    """The smallest 2^a 3^b 5^c at or above n (fast FFT lengths)."""
    best = 1 << max(0, (n - 1).bit_length())
    for five in (1, 5, 25, 125):
        for three in (1, 3, 9, 27, 81):
            m = five * three
            while m < n:
                m *= 2
            best = min(best, m)
    return best


def autocorrelation(detail: Floats) -> Floats:
    height, width = detail.shape
    shape = (_smooth_size(height), _smooth_size(width))
    spectrum = fft.rfft2(detail - detail.mean(), shape)
    # The power and the normalising in place: the same products, sums and quotients, two
    # planes fewer made (each copy of the framed reading makes one of these).
    power = spectrum.real ** 2
    power += spectrum.imag ** 2
    acf = fft.irfft2(power, shape)
    acf /= max(float(acf[0, 0]), 1e-9)
    return acf


def peak(acf: Floats, guess: tuple[float, float], reach: int) -> tuple[float, float, float]:
    """The sub-pixel position (dx, dy) and height of the highest point within `reach` of
    `guess` (a parabola through each axis's neighbours, its vertex within half a pixel of that
    point: further only when a neighbour is higher, where no parabola is a peak's shape)."""
    x, y, c = _highest(acf, guess, reach)
    height, width = acf.shape

    def offset(minus: float, centre: float, plus: float) -> float:
        bend = minus - 2 * centre + plus
        return 0.0 if bend >= 0 else min(0.5, max(-0.5, 0.5 * (minus - plus) / bend))

    dx = offset(float(acf[y % height, (x - 1) % width]), c, float(acf[y % height, (x + 1) % width]))
    dy = offset(float(acf[(y - 1) % height, x % width]), c, float(acf[(y + 1) % height, x % width]))
    return x + dx, y + dy, c


def _highest(acf: Floats, guess: tuple[float, float], reach: int) -> tuple[int, int, float]:
    """The whole-pixel position and height of the highest point within `reach` of `guess`."""
    gx, gy = round(guess[0]), round(guess[1])
    xs = np.arange(gx - reach, gx + reach + 1)
    ys = np.arange(gy - reach, gy + reach + 1)
    window = wrapped_window(acf, xs, ys)
    iy, ix = np.unravel_index(int(np.argmax(window)), window.shape)
    return int(xs[ix]), int(ys[iy]), float(window[iy, ix])


def wrapped_window(acf: Floats, xs: npt.NDArray[np.integer], ys: npt.NDArray[np.integer],
                   ) -> Floats:
    """`acf` at the rows `ys` and columns `xs` (each a run of consecutive lags), wrapped round
    the plane: a view of it where no lag wraps (the peaks' windows mostly; a gather of every
    point cost as much as the peak's whole fit)."""
    height, width = acf.shape
    if xs[0] >= 0 and xs[-1] < width and ys[0] >= 0 and ys[-1] < height:
        return acf[ys[0]: ys[-1] + 1, xs[0]: xs[-1] + 1]
    gathered: Floats = acf[np.ix_(ys % height, xs % width)]
    return gathered


def _is_peak(acf: Floats, guess: tuple[float, float], reach: int) -> bool:
    """Whether the highest point within `reach` of `guess` is a local maximum of `acf` (none
    of its 8 neighbours higher): a point on the window's border with a higher neighbour out of
    it is a slope rising away, not a peak near the guess."""
    x, y, top = _highest(acf, guess, reach)
    height, width = acf.shape
    around = acf[np.ix_(np.arange(y - 1, y + 2) % height, np.arange(x - 1, x + 2) % width)]
    return bool(top >= float(around.max()))


def tile_vectors(grey: Image.Image, count: int = 2, flat_paper: int | None = None,
                 small: int = 0) -> list[tuple[float, float]]:
    """Up to `count` candidate horizontal tile vectors (dx, dy) in `grey`'s pixels, best first,
    from the autocorrelation of its residual; none when the residual is too sparse to hold
    the mark (MIN_RESIDUAL_SHARE). `flat_paper`: a level the pixels at or over which are flat
    paper, with no mark to read: only the residual under it counts (JPEG's noise around
    letters on paper clipped to white is no mark). `small`: up to this many more, at scales
    from SMALL_SCALE to MIN_SCALE, after the others (they never displace one of them), when
    the image is read at full size."""
    factor = 1
    while max(grey.size) > _MAX_ACF_SIDE:
        grey = grey.reduce(2)
        factor *= 2
    speaking = residual(grey, 2) != 0
    if flat_paper is not None:
        speaking &= np.asarray(grey) < flat_paper
    if np.count_nonzero(speaking) < MIN_RESIDUAL_SHARE * speaking.size:
        return []
    acf = autocorrelation(weighted_residual(grey, 2))
    low = TILE * MIN_SCALE / factor
    found = _peaks(acf, low, TILE * MAX_SCALE / factor, count)
    if small and factor == 1:  # `read_at_full_size`
        found += _peaks(acf, TILE * SMALL_SCALE, low, small, found)
    return [(x * factor, y * factor) for x, y in found]


def _peaks(acf: Floats, low: float, high: float, count: int,
           taken: Sequence[tuple[float, float]] = ()) -> list[tuple[float, float]]:
    """The `count` highest peaks of `acf` whose lags are `low` to `high` long and within
    MAX_ANGLE of the horizontal, away from the peaks `taken` already, each refined
    (`_refine`), best first."""
    height, width = acf.shape
    high = min(high, width / 2.5)
    xs = np.arange(math.floor(low * math.cos(MAX_ANGLE)), math.ceil(high) + 1)
    reach_y = math.ceil(high * math.sin(MAX_ANGLE))
    ys = np.arange(-reach_y, reach_y + 1)
    region = acf[np.ix_(ys % height, xs % width)].copy()
    radius = np.hypot(xs[None, :], ys[:, None])
    angle = np.abs(np.arctan2(ys[:, None], xs[None, :]))
    region[(radius < low) | (radius > high) | (angle > MAX_ANGLE)] = -np.inf
    for x, y in taken:
        region[np.hypot(xs[None, :] - x, ys[:, None] - y) < 4] = -np.inf
    found: list[tuple[float, float]] = []
    for _ in range(count):
        iy, ix = np.unravel_index(int(np.argmax(region)), region.shape)
        if not np.isfinite(region[iy, ix]):
            break
        found.append(_refine(acf, (float(xs[ix]), float(ys[iy]))))
        # Blank this peak and its neighbourhood before looking for the next candidate.
        near = np.hypot(xs[None, :] - xs[ix], ys[:, None] - ys[iy]) < 4
        region[near] = -np.inf
    return found


def _refine(acf: Floats, coarse: tuple[float, float]) -> tuple[float, float]:
    """The tile vector fitted through its sub-pixel peak and those of its 2nd and 3rd
    harmonics (least squares through the origin), each taken only if it is a clear peak."""
    x1, y1, top = peak(acf, coarse, 1)
    sum_x, sum_y, weight = x1, y1, 1.0
    height, width = acf.shape
    for k in (2, 3):
        if k * abs(x1) > width / 2 - 3 or k * abs(y1) > height / 2 - 3:
            break
        reach = 2
        if not _is_peak(acf, (k * x1, k * y1), reach):
            # The first peak may lie a pixel or two off the tile's, merged with a peak of the
            # page's beside it (a screen-grab at 0.38: 72.4 px where the tile is 73.8), and
            # its harmonics k times as far: looked for again within k px of the fundamental.
            reach = 2 * k
        if not _is_peak(acf, (k * x1, k * y1), reach):
            # A slope, no peak: a parabola through it put the text cover's 3rd harmonic
            # 14,000 px off after a 60 % downscale and JPEG q60, its tile vector at -3,059 px
            # instead of 115.2, and the leak was missed (docs/leak-tracing.md).
            break
        xk, yk, value = peak(acf, (k * x1, k * y1), reach)
        if value < 0.4 * top:
            break
        sum_x, sum_y, weight = sum_x + k * xk, sum_y + k * yk, weight + k * k
    return sum_x / weight, sum_y / weight

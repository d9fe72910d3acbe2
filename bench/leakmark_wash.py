"""Washing the invisible mark off a served page (docs/leak-tracing.md, "Washing the mark off").

Who washes has the source (the tile and chip sizes, the decoder, the embedder) and one marked
page as served, not the deployment's key. Each wash keeps the page readable (PSNR against the
page as served, measured by the caller); what counts is whether the trace still reads it.

- `noise`: Gaussian noise over the page area, then JPEG q75 (PSNR about 36 dB).
- `median`: a 5 x 5 median over the paper where it changes a pixel by 8 levels at most (the
  text left as it is), then JPEG q75.
- `wrong key`: the mark the code lays out under a guessed key (the published seed) for the id
  the washer hopes it is, taken off (the darkened chips lightened back).
- `with the key` (the control that shows the test can fail): the deployment's layout read off
  the page through the decoder, so every chip's state is known; the paper and the ink on
  darkened chips are brought level with the others'.
- `observed chips` (no key at all): each chip's state read off the page itself. The tile's
  period (192 px) and the chip grid (8 px from the page's corner) are in the source; folding
  the paper of every tile into one, each chip's darkening shows (2-3 levels under the paper's
  on about half of them), and the same levelling as `with the key` follows.
- `moved_back` (against the placement mark too): the observed chips' wash, after the pattern's
  words are moved back toward their places as far as the page stays readable.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter

from bench.leakmark_attacks import jpeg, psnr
from render.forensic import STRENGTH, detect, ink, pattern_model
from render.forensic.layout import CHIP, TILE, TILE_CHIPS, Layout, keyed

Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
# A wash: (served page, page height, the deployment's layout; only `with the key` reads it).
Wash = Callable[[Image.Image, int, Layout], Image.Image]
_PAPER_REACH = 12  # grey levels under the paper's level still paper
_PAPER_GAP = 4  # grey levels under the paper's: never a letter (JPEG noise on the paper)
_LETTER_REACH = 10  # grey levels either side of the letters' level
_NOISE = 4.0  # grey levels, standard deviation
_REJPEG = 75
_MEDIAN_BAND = 8  # grey levels a median may change a pixel by
_GUESSED_ID = 0x1234_5678_9ABC


def _paper_level(luminance: Floats) -> float:
    return float(np.percentile(luminance, 90))


def _chip_plane(darkened: Mask, height: int, width: int) -> Mask:
    """Per pixel of the page area: on a darkened chip (the tile repeated from the corner)."""
    tile = np.kron(darkened.reshape(TILE_CHIPS, TILE_CHIPS), np.ones((CHIP, CHIP), dtype=bool))
    plane: Mask = np.tile(tile, (math.ceil(height / TILE), math.ceil(width / TILE)))
    return plane[:height, :width]


def _levelled(image: Image.Image, page_height: int, darkened: Mask) -> Image.Image:
    """The page with the mark undone as far as `darkened` (the chips the washer believes
    darkened) allows: those chips' pixels multiplied back by 255 / (255 - STRENGTH), what the
    embedder multiplied them by; then the visible pattern's letters, which the mark makes a
    few levels darker or lighter chip by chip, set back to their one grey (the level the
    decoder's own `ink.ink_level` finds), whatever the chips."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float64).copy()
    area = pixels[:page_height]
    plane = _chip_plane(darkened, *area.shape[:2])
    area[plane] *= 255.0 / (255 - STRENGTH)
    grey = Image.fromarray(np.clip(np.rint(area.mean(axis=2)), 0, 255).astype(np.uint8))
    paper = ink.paper_level(grey)
    # Every level the decoder itself would read as the letters' ink.
    levels = [ink.ink_level(grey), *pattern_model.lattice_ink_levels(
        grey, pattern_model.flat_areas(grey)).levels]
    luminance = area.mean(axis=2)
    for level in sorted({level for level in levels if level is not None}):
        if paper is None:
            break
        letters = (np.abs(luminance - level) <= _LETTER_REACH) & (luminance < paper - _PAPER_GAP)
        area[letters] += (level - luminance[letters])[:, None]
        luminance[letters] = level
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8))


def _observed_chips(image: Image.Image, page_height: int) -> Mask:
    """Each chip's state from the page alone: the paper of every tile folded into one (the
    period and the chip grid are public), a chip darker than the median one is darkened."""
    luminance = np.asarray(image.convert("L"), dtype=np.float64)[:page_height]
    paper = _paper_level(luminance)
    weight = (luminance >= paper - _PAPER_REACH).astype(np.float64)
    rows, cols = (math.ceil(side / TILE) * TILE for side in luminance.shape)
    sums, counts = np.zeros((rows, cols)), np.zeros((rows, cols))
    sums[: luminance.shape[0], : luminance.shape[1]] = luminance * weight
    counts[: luminance.shape[0], : luminance.shape[1]] = weight
    fold = (sums.reshape(rows // TILE, TILE, cols // TILE, TILE).sum(axis=(0, 2)),
            counts.reshape(rows // TILE, TILE, cols // TILE, TILE).sum(axis=(0, 2)))
    chip_sums = fold[0].reshape(TILE_CHIPS, CHIP, TILE_CHIPS, CHIP).sum(axis=(1, 3))
    chip_counts = fold[1].reshape(TILE_CHIPS, CHIP, TILE_CHIPS, CHIP).sum(axis=(1, 3))
    means = chip_sums / np.maximum(chip_counts, 1.0)
    darkened: Mask = (means < np.median(means)).reshape(-1)
    return darkened


def _keyed_chips(image: Image.Image, plan: Layout) -> Mask:
    """Each chip's state from the deployment's layout: the value the page carries, read with
    it, laid out again (nothing is known when the page does not decode)."""
    found = detect(image, plan)
    if found is None:
        return np.zeros(TILE_CHIPS * TILE_CHIPS, dtype=bool)
    darkened: Mask = plan.chip_bits(found.render_id).astype(bool)
    return darkened


def _noise(image: Image.Image, page_height: int, _: Layout) -> Image.Image:
    pixels = np.asarray(image.convert("RGB"), dtype=np.float64).copy()
    noise = np.random.default_rng(7).normal(0.0, _NOISE, pixels[:page_height].shape[:2])
    pixels[:page_height] += noise[:, :, None]
    return jpeg(Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8)), _REJPEG)


def _median(image: Image.Image, page_height: int, _: Layout) -> Image.Image:
    rgb = image.convert("RGB")
    smoothed = np.asarray(rgb.filter(ImageFilter.MedianFilter(5)))
    pixels = np.asarray(rgb).copy()
    luminance = pixels[:page_height].mean(axis=2)
    change = np.abs(smoothed[:page_height].astype(np.int16) - pixels[:page_height]).max(axis=2)
    # Only within the mark's band: the paper, and no change larger than the mark could make.
    band = (luminance >= _paper_level(luminance) - _PAPER_REACH) & (change <= _MEDIAN_BAND)
    pixels[:page_height][band] = smoothed[:page_height][band]
    return jpeg(Image.fromarray(pixels), _REJPEG)


def _wrong_key(image: Image.Image, page_height: int, _: Layout) -> Image.Image:
    guessed = keyed(None).chip_bits(_GUESSED_ID).astype(bool)
    return _levelled(image, page_height, guessed)


def _with_key(image: Image.Image, page_height: int, plan: Layout) -> Image.Image:
    return _levelled(image, page_height, _keyed_chips(image, plan))


def _observed(image: Image.Image, page_height: int, _: Layout) -> Image.Image:
    return _levelled(image, page_height, _observed_chips(image, page_height))


def blended(served: Image.Image, home: Image.Image, share: float) -> Image.Image:
    """`share` of the way from the page as served to the page with every word at home (for a
    word a pixel off along one axis, exactly a bilinear move)."""
    mixed = (1 - share) * np.asarray(served, dtype=np.float64) \
        + share * np.asarray(home, dtype=np.float64)
    return Image.fromarray(np.clip(np.rint(mixed), 0, 255).astype(np.uint8))


def moved_back(served: Image.Image, home: Image.Image, page_height: int, floor_db: float
               ) -> tuple[Image.Image, float]:
    """The best wash against both marks that the code allows: the invisible mark's chips
    observed and levelled, and the pattern's words moved back toward their places as far as
    the page stays within `floor_db` of what was served (steps of 5 %), with the true offsets
    (`home`: the page with every word in its place), which no washer measures better. The
    washed page and the share moved."""
    for step in range(20, 0, -1):
        washed = _observed(blended(served, home, step / 20), page_height, keyed(None))
        if psnr(served, washed) >= floor_db:
            return washed, step / 20
    return _observed(served, page_height, keyed(None)), 0.0


WASHES: dict[str, Wash] = {
    "noise + jpeg q75": _noise,
    "median 5x5 in the mark's band + jpeg q75": _median,
    "the layout under a wrong key": _wrong_key,
    "with the key (control)": _with_key,
    "observed chips, no key": _observed,
}

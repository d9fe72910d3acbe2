"""`bench.leakmark_jitter`, read blind: without the viewer's text and without the copies'
places, which a trace of a washed page does not have (docs/leak-tracing.md, "A mark the washes
above leave"). `python -m bench.leakmark_jitter_blind --pages 8 --seed 3`.

The offsets are a keyed field over the page (COLUMNS cells across it, square, so a rescaled
page keeps them), each word moved by the field's value at its centre. The read finds the
pattern's lattice and its copies' average at every pixel (`pattern_model`, as the decoder
does for the ink), measures the leak's offset against that average in small windows on the
letters' edges, and correlates each window's offset with the field's value under the
window's centre: a word straddling two cells
dilutes the evidence, it does not mislead it. The leak is taken uncropped (the strip's height
known), at the size served or rescaled: a washed page, shared as it was washed.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image

from bench.leakmark import psnr
from bench.leakmark_attacks import MARK, SERVED_QUALITY, Page, corpus_pages, jpeg
from bench.leakmark_jitter import (
    Word,
    at_home,
    best_offset,
    blended,
    copy_corners,
    jittered_page,
    reduced,
    tile_words,
)
from render.forensic import ink, pattern_model
from render.forensic.decode import NEAR_PAPER

Floats = npt.NDArray[np.float64]
COLUMNS = 26  # the field's cells across the page (48 px each on a 1237-px page)
_WINDOW = 20  # px a side of a measuring window
_STEP = 10  # px between windows
_REACH = 2  # px looked for either way
_MIN_CONTRAST = 12.0  # the model's standard deviation in a window: letters' edges in it
_MIN_MATCH = 0.6
_MIN_LAG = 60  # px: the pattern's lattice is longer at any scale read (0.3: 84 px)


def field(key: bytes, render: int, size: tuple[int, int]) -> npt.NDArray[np.int64]:
    """(rows, COLUMNS, 2) offsets in {-1, 0, 1}, one per cell of a page of `size`."""
    seed = hashlib.blake2b(render.to_bytes(8, "big"), key=key, digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(seed, "big"))
    return rng.integers(-1, 2, size=(math.ceil(COLUMNS * size[1] / size[0]), COLUMNS, 2))


def _cells(ys: Floats, xs: Floats, width: float, drawn: npt.NDArray[np.int64]
           ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The field's cell under each point of a page `width` px wide (clamped to the page)."""
    side = width / COLUMNS
    rows = np.clip((ys // side).astype(np.intp), 0, drawn.shape[0] - 1)
    columns = np.clip((xs // side).astype(np.intp), 0, drawn.shape[1] - 1)
    return rows, columns


def word_offsets(page: Page, pattern_words: list[Word], drawn: npt.NDArray[np.int64]
                 ) -> npt.NDArray[np.int64]:
    """Each word of each copy moved by the field's value at the word's centre (clamped to the
    page: a copy's words may start off it)."""
    centres = np.array([(cy + (word.box[1] + word.box[3]) / 2, cx + (word.box[0] + word.box[2]) / 2)
                        for cx, cy in copy_corners(page) for word in pattern_words])
    rows, columns = _cells(centres[:, 0], centres[:, 1], page.image.width, drawn)
    offsets: npt.NDArray[np.int64] = drawn[rows, columns]
    return offsets


class Reading(NamedTuple):
    offsets: Floats  # (windows, 2), px of the leak, against the copies' average
    centres: npt.NDArray[np.intp]  # (windows, 2): each window's centre, row and column
    width: int  # the page's, in the leak


def measured(leak: Image.Image, page_height: int) -> Reading | None:
    """Offsets of the leak against its copies' average in windows over the letters' edges;
    None when no pattern lattice shows. `page_height`: the rows above the strip."""
    grey = leak.convert("L").crop((0, 0, leak.width, page_height))
    values = np.asarray(grey, dtype=np.float32)
    found_lattice = _lattice(grey, values)
    if found_lattice is None:
        return None
    level, lattice = found_lattice
    model = pattern_model.pattern_model(values, values >= level - ink.INK_BAND, lattice,
                                        np.ones(values.shape, dtype=bool)).reshape(values.shape)
    image = 255.0 - values.astype(np.float64)
    average = 255.0 - model.astype(np.float64)
    found, centres = [], []
    height, width = values.shape
    for top in range(_REACH, height - _WINDOW - _REACH, _STEP):
        for left in range(_REACH, width - _WINDOW - _REACH, _STEP):
            template = average[top: top + _WINDOW, left: left + _WINDOW]
            if template.std() < _MIN_CONTRAST:
                continue
            offset = best_offset(image[top - _REACH: top + _WINDOW + _REACH,
                                       left - _REACH: left + _WINDOW + _REACH],
                                 template, _REACH, _MIN_MATCH)
            if offset is not None:
                found.append(offset)
                centres.append((top + _WINDOW // 2, left + _WINDOW // 2))
    return Reading(np.array(found).reshape(-1, 2),
                   np.array(centres, dtype=np.intp).reshape(-1, 2), width)


def _lattice(grey: Image.Image, values: npt.NDArray[np.float32]
             ) -> tuple[int, npt.NDArray[np.float64]] | None:
    """The pattern's ink level and lattice, as the decoder finds them: the histogram's ink
    level, else those its lattice gives (a reduced page's letters smeared toward the paper)."""
    paper = ink.paper_level(grey)
    flat = pattern_model.flat_areas(grey)
    level = ink.ink_level(grey)
    for candidate in ([] if level is None else [level]) + pattern_model.lattice_ink_levels(
            grey, flat).levels:
        if paper is None or candidate >= paper - NEAR_PAPER:
            continue
        near = (np.abs(values - candidate) <= ink.INK_BAND) & ~flat
        lattice = pattern_model.pattern_lattice(pattern_model.ink_autocorrelation(near),
                                                _MIN_LAG)
        if lattice is not None:
            return candidate, lattice
    return None


def z_score(offsets: Floats, centres: npt.NDArray[np.intp], width: int,
            drawn: npt.NDArray[np.int64]) -> float:
    """Correlation of the windows' offsets with the field under their centres (the page's
    mean offset taken off), times the square root of the windows' count (overlapping windows
    are not independent: compare with other renders' z, not with a normal table)."""
    if len(offsets) < 4:
        return 0.0
    rows, columns = _cells(centres[:, 0].astype(np.float64), centres[:, 1].astype(np.float64),
                           width, drawn)
    expected = drawn[rows, columns].astype(np.float64)
    m = (offsets - offsets.mean(axis=0)).ravel()
    e = (expected - expected.mean(axis=0)).ravel()
    denominator = float(np.linalg.norm(m) * np.linalg.norm(e))
    return 0.0 if denominator == 0 else float(m @ e) / denominator * math.sqrt(len(m))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for page in corpus_pages(args.pages):
        pattern_words = tile_words(MARK, page.image.width)
        key, render = rng.randbytes(32), rng.getrandbits(61)
        size = (page.image.width, page.page_height)
        drawn = field(key, render, size)
        served = jpeg(jittered_page(page, pattern_words, word_offsets(page, pattern_words, drawn)),
                      SERVED_QUALITY)
        home = jpeg(at_home(page, pattern_words), SERVED_QUALITY)
        leaks = {"as served (jpeg q80)": (served, page.page_height),
                 "reduced to 0.6 + jpeg q75": (reduced(served, 0.6),
                                               round(page.page_height * 0.6))}
        for share in (0.5, 0.6, 1.0):
            leaks[f"move back x {share}"] = (blended(served, home, share), page.page_height)
        others = [field(key, rng.getrandbits(61), size) for _ in range(args.candidates)]
        print(f"{page.name}:")
        for name, (leak, page_height) in leaks.items():
            reading = measured(leak, page_height)
            if reading is None:
                true, worst, count = 0.0, 0.0, 0
            else:
                # In units of the other renders' spread: overlapping windows are not
                # independent, so the raw z of a wrong render is wider than a normal's.
                wrong = np.array([z_score(*reading, other) for other in others])
                spread = float(wrong.std()) or 1.0
                true = (z_score(*reading, drawn) - float(wrong.mean())) / spread
                worst = (float(wrong.max()) - float(wrong.mean())) / spread
                count = len(reading.offsets)
            quality = psnr(served, leak) if leak.size == served.size else math.inf
            rows.setdefault(name, []).append((true, worst, quality))
            shown = "-" if math.isinf(quality) else f"{quality:.1f} dB"
            print(f"  {name}: z {true:.1f} (others at most {worst:.1f}), {count} windows, "
                  f"{shown}", flush=True)
    print(f"\n| Leak | true render's z, in the others' spread (min, median) | largest of"
          f" {args.candidates} others' |"
          " PSNR against the page as served (min) |\n|---|---|---|---|")
    for name, values in rows.items():
        trues, worsts, qualities = zip(*values, strict=True)
        low = min(qualities)
        shown = "-" if math.isinf(low) else f"{low:.1f} dB"
        print(f"| {name} | {min(trues):.1f}, {statistics.median(trues):.1f} | "
              f"{max(worsts):.1f} | {shown} |")


if __name__ == "__main__":
    main()

"""A measurement, not a feature: would keyed per-render jitter of the visible pattern's words
resist the washes that remove the invisible mark (docs/leak-tracing.md, "Washing the mark
off")? `python -m bench.leakmark_jitter --pages 8 --seed 3`.

Every word of every copy of the pattern is pasted up to one pixel off its place, each way,
the offsets drawn from a keyed function of the render (here: of a random id). Nothing in the
source places a word there, so a washer who wants the words back where the code puts them has
to move them, which changes the letters' edges as much as the jitter did. The trace, informed,
measures every word's offset from the copies' average and correlates them with the offsets
each candidate render would have drawn: the true render against `--candidates` others.

What it prints, per leak: the true render's z-score (correlation x sqrt(degrees of freedom)),
the largest of the others', and what the leak costs against the page as served (PSNR). The
washes a washer with the code can make (none can tell a jittered word from its place without
the key but by measuring it, as the trace does):
- `move back x f`: every word moved by f of its offset toward its place, as a blend of the
  page as served and the page with every word at home (exactly a bilinear move for a word
  one pixel off along one axis);
- `noise + jpeg q75`.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image

from bench.leakmark_attacks import MARK, SERVED_QUALITY, Page, corpus_pages, jpeg, psnr
from bench.leakmark_wash import blended
from render.kernels import blend
from render.watermark import pattern, viewer_mark
from render.wire.model import WatermarkSpec

Floats = npt.NDArray[np.float64]
_REACH = 3  # pixels a word is looked for around its place
_MIN_MATCH = 0.4  # a word's best normalised correlation below this: covered, not measured


@dataclass(frozen=True)
class Word:
    pieces: tuple[pattern.Piece, ...]  # relative to the tile's corner
    box: tuple[int, int, int, int]  # left, top, right, bottom in the tile


def tile_words(mark: WatermarkSpec, width: int) -> list[Word]:
    """The pattern's words one by one, as `pattern.make_tile` places them."""
    found = []
    for (ax, ay), (plain, _) in pattern.placed_words(viewer_mark.tile_lines(mark),
                                                     pattern.font_size(width)):
        placed = tuple(p._replace(dx=ax + p.dx, dy=ay + p.dy) for p in plain)
        if placed:
            found.append(Word(placed, (min(p.dx for p in placed), min(p.dy for p in placed),
                                       max(p.dx + p.width for p in placed),
                                       max(p.dy + p.height for p in placed))))
    return found


def jitter(key: bytes, render: int, copies: int, per_copy: int, whole_copies: bool = False
           ) -> npt.NDArray[np.int64]:
    """(copies x per_copy, 2) offsets in {-1, 0, 1}: what the render's keyed function draws
    per word (`whole_copies`: one offset for all the words of a copy)."""
    seed = hashlib.blake2b(render.to_bytes(8, "big"), key=key, digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(seed, "big"))
    drawn = rng.integers(-1, 2, size=(copies, 1 if whole_copies else per_copy, 2))
    return np.broadcast_to(drawn, (copies, per_copy, 2)).reshape(-1, 2)


def copy_corners(page: Page) -> list[tuple[int, int]]:
    """The copies' corners, as `pattern.paste` places them."""
    tile = page.overlay.tile
    return list(pattern.lattice((page.image.width, page.page_height), tile.block, tile.size))


def jittered_page(page: Page, pattern_words: list[Word], offsets: npt.NDArray[np.int64]
                  ) -> Image.Image:
    """The page with the pattern's words at `offsets` off their places (zeros: as served
    today, without the invisible mark)."""
    pixels = bytearray(page.drawn)
    area = (page.image.width, page.page_height)
    corners = copy_corners(page)
    index = 0
    for corner in corners:
        pieces = []
        for word in pattern_words:
            dx, dy = (int(v) for v in offsets[index])
            pieces += [p._replace(dx=p.dx + dx, dy=p.dy + dy) for p in word.pieces]
            index += 1
        blend.paste(pixels, page.image.width * 4, area, [corner], pieces)
    image = Image.frombuffer("RGBX", page.image.size, bytes(pixels), "raw", "RGBX", 0, 1)
    out = image.convert("RGB")
    out.paste(page.image.crop((0, page.page_height, *page.image.size)), (0, page.page_height))
    return out


def measured(image: Image.Image, page: Page, pattern_words: list[Word], scale: float = 1.0
             ) -> tuple[Floats, npt.NDArray[np.bool_]]:
    """Every word's offset (pixels of the page as served) from the copies' average, and
    whether it was measured (the word whole on the page and matching its average)."""
    ink = 255.0 - np.asarray(image.convert("L"), dtype=np.float64)
    corners = copy_corners(page)
    limit = (page.image.width * scale, page.page_height * scale)
    offsets = np.zeros((len(corners) * len(pattern_words), 2))
    valid = np.zeros(len(corners) * len(pattern_words), dtype=bool)
    for w, word in enumerate(pattern_words):
        left, top, right, bottom = (v * scale for v in word.box)
        size = (math.ceil(bottom - top), math.ceil(right - left))
        patches, where = [], []
        for c, (cx, cy) in enumerate(corners):
            x0, y0 = cx * scale + left, cy * scale + top
            ix, iy = round(x0), round(y0)
            if ix - _REACH < 0 or iy - _REACH < 0 or ix + size[1] + _REACH > limit[0] \
                    or iy + size[0] + _REACH > limit[1]:
                continue
            patches.append(ink[iy - _REACH: iy + size[0] + _REACH,
                               ix - _REACH: ix + size[1] + _REACH])
            where.append((c, x0 - ix, y0 - iy))
        if len(patches) < 3:
            continue
        template = np.mean([p[_REACH:-_REACH, _REACH:-_REACH] for p in patches], axis=0)
        for patch, (c, fx, fy) in zip(patches, where, strict=True):
            found = best_offset(patch, template, _REACH, _MIN_MATCH)
            if found is not None:
                index = c * len(pattern_words) + w
                offsets[index] = ((found[0] - fx) / scale, (found[1] - fy) / scale)
                valid[index] = True
    return offsets, valid


def best_offset(patch: Floats, template: Floats, reach: int, min_match: float
                ) -> tuple[float, float] | None:
    """(dx, dy) to a tenth of a pixel at which `template` best matches `patch` (the template
    with `reach` px of margin each side): the peak of their normalised correlation, refined
    by a parabola; None when the peak is under `min_match` or on the margin's edge."""
    side = 2 * reach + 1
    height, width = template.shape
    centred = template - template.mean()
    norm = float(np.linalg.norm(centred))
    scores = np.empty((side, side))
    for dy in range(side):
        for dx in range(side):
            window = patch[dy: dy + height, dx: dx + width]
            window = window - window.mean()
            scores[dy, dx] = float((window * centred).sum()
                                   / (np.linalg.norm(window) * norm + 1e-9))
    py, px = np.unravel_index(int(np.argmax(scores)), scores.shape)
    if scores[py, px] < min_match or py in (0, side - 1) or px in (0, side - 1):
        return None
    return (px - reach + _vertex(*scores[py, px - 1: px + 2]),
            py - reach + _vertex(*scores[py - 1: py + 2, px]))


def _vertex(minus: float, centre: float, plus: float) -> float:
    curve = minus - 2 * centre + plus
    return 0.0 if curve >= 0 else float(np.clip(0.5 * (minus - plus) / curve, -0.5, 0.5))


def z_score(offsets: Floats, valid: npt.NDArray[np.bool_], expected: npt.NDArray[np.int64],
            per_copy: int, whole_copies: bool = False) -> float:
    """Correlation of the measured and expected offsets, each copy's mean taken off (a
    copy's registration error), times the square root of the degrees of freedom.
    `whole_copies`: each copy's mean offset against the expected one, the page's mean off."""
    if whole_copies:
        return _copies_z(offsets, valid, expected, per_copy)
    m, e = offsets.copy(), expected.astype(np.float64)
    copies = len(m) // per_copy
    dof = 0
    for c in range(copies):
        rows = slice(c * per_copy, (c + 1) * per_copy)
        keep = valid[rows]
        if keep.sum() < 2:
            valid = valid.copy()
            valid[rows] = False
            continue
        for array in (m, e):
            block = array[rows]
            block[keep] -= block[keep].mean(axis=0)
        dof += 2 * (int(keep.sum()) - 1)
    mv, ev = m[valid].ravel(), e[valid].ravel()
    denominator = float(np.linalg.norm(mv) * np.linalg.norm(ev))
    if dof < 4 or denominator == 0:
        return 0.0
    return float(mv @ ev) / denominator * math.sqrt(dof)


def _copies_z(offsets: Floats, valid: npt.NDArray[np.bool_], expected: npt.NDArray[np.int64],
              per_copy: int) -> float:
    m, e = [], []
    for c in range(len(offsets) // per_copy):
        rows = slice(c * per_copy, (c + 1) * per_copy)
        if valid[rows].sum() >= 2:
            m.append(offsets[rows][valid[rows]].mean(axis=0))
            e.append(expected[rows][0].astype(np.float64))
    if len(m) < 3:
        return 0.0
    mv, ev = np.array(m), np.array(e)
    mv, ev = (mv - mv.mean(axis=0)).ravel(), (ev - ev.mean(axis=0)).ravel()
    denominator = float(np.linalg.norm(mv) * np.linalg.norm(ev))
    dof = 2 * (len(m) - 1)
    return 0.0 if denominator == 0 else float(mv @ ev) / denominator * math.sqrt(dof)


def at_home(page: Page, pattern_words: list[Word]) -> Image.Image:
    """The page with every word of every copy in its place (as served today, without the
    invisible mark)."""
    unmoved = np.zeros((len(copy_corners(page)) * len(pattern_words), 2), dtype=np.int64)
    return jittered_page(page, pattern_words, unmoved)


def moved_back(served: Image.Image, page: Page, pattern_words: list[Word], share: float,
               ) -> Image.Image:
    """The best a washer with the code does: every word moved `share` of the way back to its
    place. Here with the true offsets (the washer measures them as the trace does, no better):
    a blend of the page as served with the page whose words are in their places."""
    home = jpeg(at_home(page, pattern_words), SERVED_QUALITY)
    return blended(served, home, share)


def _noise(image: Image.Image, page_height: int) -> Image.Image:
    pixels = np.asarray(image, dtype=np.float64).copy()
    pixels[:page_height] += np.random.default_rng(7).normal(0, 4.0, pixels[:page_height].shape[:2]
                                                             )[:, :, None]
    return jpeg(Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8)), 75)


def reduced(image: Image.Image, factor: float) -> Image.Image:
    size = (round(image.width * factor), round(image.height * factor))
    return jpeg(image.resize(size, Image.Resampling.LANCZOS), 75)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--whole-copies", action="store_true",
                        help="one offset per copy of the pattern rather than per word")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for page in corpus_pages(args.pages):
        pattern_words = tile_words(MARK, page.image.width)
        copies, per_copy = len(copy_corners(page)), len(pattern_words)
        count = copies * per_copy
        key, render = rng.randbytes(32), rng.getrandbits(61)
        offsets = jitter(key, render, copies, per_copy, args.whole_copies)
        served = jpeg(jittered_page(page, pattern_words, offsets), SERVED_QUALITY)
        plain = at_home(page, pattern_words)
        cost = psnr(plain, jittered_page(page, pattern_words, offsets))
        leaks = {"as served (jpeg q80)": (served, 1.0),
                 "reduced to 0.6 + jpeg q75": (reduced(served, 0.6), 0.6),
                 "noise + jpeg q75": (_noise(served, page.page_height), 1.0)}
        for share in (0.5, 0.6, 0.7, 1.0):
            leaks[f"move back x {share}"] = (
                moved_back(served, page, pattern_words, share), 1.0)
        print(f"{page.name}: {count} words, jitter costs {cost:.1f} dB against no jitter")
        others = [jitter(key, rng.getrandbits(61), copies, per_copy, args.whole_copies)
                  for _ in range(args.candidates)]
        for name, (leak, scale) in leaks.items():
            found, valid = measured(leak, page, pattern_words, scale)
            true = z_score(found, valid, offsets, per_copy, args.whole_copies)
            worst = max(z_score(found, valid, o, per_copy, args.whole_copies) for o in others)
            quality = psnr(served, leak) if scale == 1.0 else math.inf  # another size
            rows.setdefault(name, []).append((true, worst, quality))
            print(f"  {name}: z {true:.1f} (others at most {worst:.1f}), {int(valid.sum())}"
                  f" words measured, {_decibels(quality)}", flush=True)
    print(f"\n| Leak | true render's z (min, median) | largest of {args.candidates} others' |"
          " PSNR against the page as served (min) |\n|---|---|---|---|")
    for name, values in rows.items():
        trues, worsts, qualities = zip(*values, strict=True)
        print(f"| {name} | {min(trues):.1f}, {statistics.median(trues):.1f} | {max(worsts):.1f}"
              f" | {_decibels(min(qualities))} |")


def _decibels(value: float) -> str:
    return "-" if math.isinf(value) else f"{value:.1f} dB"


if __name__ == "__main__":
    main()

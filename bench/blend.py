"""The watermark blend's candidates, timed on one page-sized canvas in the same run.

    .venv/bin/python -m bench.blend [--rounds 30]

Each candidate blends the same tile (a viewer's three lines at the size a 1600 px page gets)
along the same lattice over a 1237 x 1600 RGBX canvas; the figure is the median of
interleaved rounds, and the ratio is to the C loop measured in the same rounds (the machine is
shared, so only ratios mean anything). Every candidate's RGB output is checked against the
C loop's before it is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from PIL import Image

from bench import blend_numpy
from render.kernels import _blend, blend_pillow
from render.watermark import pattern

SIZE = (1237, 1600)
LINES = ["Confidential — Bench Corp", "Ann Lee · ann.lee@client.example",
         "203.0.113.7 · 2026-11-24 04:30:12 UTC"]
Candidate = Callable[[bytearray, pattern.Tile], None]


def _corners(tile: pattern.Tile) -> tuple[tuple[int, int], ...]:
    return pattern.lattice(SIZE, tile.block, tile.size)


def c_loop(pixels: bytearray, tile: pattern.Tile) -> None:
    _blend.paste(pixels, SIZE[0] * 4, SIZE, _corners(tile), tile.pieces)


def numpy_loop(pixels: bytearray, tile: pattern.Tile) -> None:
    blend_numpy.paste(pixels, SIZE[0] * 4, SIZE, _corners(tile), tile.pieces)


def pillow_paste(pixels: bytearray, tile: pattern.Tile) -> None:
    """Pillow's masked paste of every piece: the fallback (render/kernels/blend_pillow.py)."""
    blend_pillow.paste(pixels, SIZE[0] * 4, SIZE, _corners(tile), tile.pieces)


def pillow_composite(pixels: bytearray, tile: pattern.Tile) -> None:
    """One RGBA overlay of the whole pattern, then Pillow's alpha_composite over the page.

    Overlapping halos are merged before they reach the page, so it is identical only where no
    two pieces overlap; timed as the other way to use Pillow alone.
    """
    overlay = Image.new("RGBA", SIZE)
    for left, top in _corners(tile):
        for piece in tile.pieces:
            x, y = left + piece.dx, top + piece.dy
            box = (max(0, -x), max(0, -y), min(piece.width, SIZE[0] - x),
                   min(piece.height, SIZE[1] - y))
            if box[0] >= box[2] or box[1] >= box[3]:
                continue
            colour = Image.frombytes("RGBX", (piece.width, piece.height), piece.colour)
            alpha = Image.frombytes("RGBX", (piece.width, piece.height), piece.alpha)
            colour = colour.convert("RGBA")
            colour.putalpha(alpha.getchannel(0))
            overlay.alpha_composite(colour, (max(0, x), max(0, y)), box)
    page = Image.frombuffer("RGBX", SIZE, pixels, "raw", "RGBX", 0, 1).convert("RGBA")
    pixels[:] = Image.alpha_composite(page, overlay).convert("RGBX").tobytes()


CANDIDATES: dict[str, Candidate] = {"C loop (render/kernels/_blend.c)": c_loop,
                                    "numpy (bench/blend_numpy.py)": numpy_loop,
                                    "Pillow paste (render/kernels/blend_pillow.py)": pillow_paste,
                                    "Pillow alpha_composite of one overlay": pillow_composite}


def _page() -> bytes:
    return Image.linear_gradient("L").resize(SIZE).convert("RGBX").tobytes()


def _rgb(pixels: bytes | bytearray) -> bytes:
    return Image.frombytes("RGBX", SIZE, bytes(pixels)).convert("RGB").tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    tile = pattern.make_tile(LINES, pattern.font_size(SIZE[0]))
    page = _page()
    reference = bytearray(page)
    c_loop(reference, tile)
    times: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    identical: dict[str, bool] = {}
    for name, candidate in CANDIDATES.items():
        pixels = bytearray(page)
        candidate(pixels, tile)
        identical[name] = _rgb(pixels) == _rgb(reference)
    for _ in range(rounds):  # interleaved: load on the machine hits every candidate alike
        for name, candidate in CANDIDATES.items():
            pixels = bytearray(page)
            start = time.perf_counter()
            candidate(pixels, tile)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["C loop (render/kernels/_blend.c)"])
    pieces = len(tile.pieces) * len(_corners(tile))
    print(f"canvas {SIZE[0]}x{SIZE[1]}, {len(tile.pieces)} pieces x "
          f"{len(_corners(tile))} corners = {pieces} blends, {rounds} rounds")
    print(f"{'candidate':40} {'median ms':>10} {'x C':>6}  identical RGB")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:40} {median * 1000:10.2f} {median / base:6.2f}  "
              f"{'yes' if identical[name] else 'no'}")


if __name__ == "__main__":
    main()

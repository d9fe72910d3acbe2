"""Watermark text set word by word, from pieces measured and drawn once per process.

The watermark's text changes with every request (its timestamp has seconds), but its words do
not: a viewer's name, email and brand come back on every page, and so do most words of a date.
Shaping and rasterising a word with FreeType costs far more than pasting a kept mask, so lines
are laid out as words at measured offsets and each word's mask is cached. Only the masks are
cached (per word and size), never an image of a page.

A line holding right-to-left text stays one piece, so that bidi reordering, which works on the
whole line, still applies.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass

from PIL import Image, ImageDraw

from render.watermark import fonts

_RTL = {"R", "AL", "AN"}
_CLOCK = re.compile(r"(\d{1,2}:\d{2}:)(\d{2})")
_CACHE_WORDS = 1024


@dataclass(frozen=True)
class Mask:
    """A word's coverage mask and where its baseline origin lies in it."""

    image: Image.Image
    origin: tuple[int, int]


@functools.lru_cache(maxsize=_CACHE_WORDS)
def is_rtl(text: str) -> bool:
    return any(unicodedata.bidirectional(char) in _RTL for char in text)


@functools.lru_cache(maxsize=_CACHE_WORDS)
def width(word: str, size: int, bold: bool = False) -> float:
    return fonts.text_width(word, size, bold)


def positions(line: str, size: int, bold: bool = False) -> list[tuple[float, str]]:
    """(x offset, word) for the words of `line`, spaces measured as spaces."""
    if is_rtl(line):
        return [(0.0, line)] if line else []
    space, x, placed = width(" ", size, bold), 0.0, []
    for part in line.split(" "):
        for piece in _pieces(part):
            placed.append((x, piece))
            x += width(piece, size, bold)
        x += space
    return placed


def _pieces(word: str) -> list[str]:
    # A clock time changes every second: its seconds are set apart, so a new second reuses
    # "14:05:" and one of sixty kept "09"s instead of drawing a new word (digits and colons do
    # not kern, so the time reads exactly as one word).
    clock = _CLOCK.fullmatch(word)
    if clock:
        return [clock[1], clock[2]]
    return [word] if word else []


def line_width(line: str, size: int, bold: bool = False) -> float:
    placed = positions(line, size, bold)
    return max((x + width(word, size, bold) for x, word in placed), default=0.0)


def wrap(text: str, size: int, max_width: float, bold: bool = False) -> list[str]:
    """Greedy word wrap by measured width; a word wider than the line is cut by characters."""
    if is_rtl(text):
        return fonts.wrap(text, size, max_width, bold)
    space = width(" ", size, bold)
    lines: list[str] = []
    current, used = "", 0.0
    for word in text.split(" "):
        needed = used + space + width(word, size, bold) if current else width(word, size, bold)
        if needed <= max_width:
            current, used = (f"{current} {word}" if current else word), needed
            continue
        if current:
            lines.append(current)
        pieces = fonts.wrap(word, size, max_width, bold)  # cuts the over-long word
        lines.extend(pieces[:-1])
        current, used = pieces[-1], width(pieces[-1], size, bold)
    lines.append(current)
    return lines


@functools.lru_cache(maxsize=_CACHE_WORDS)
def mask(word: str, size: int, bold: bool = False, pad: int = 0) -> Mask:
    """`word` drawn upright in white on black, with `pad` pixels of room around it."""
    ascent, descent = fonts.metrics(size, bold)
    image = Image.new("L", (math.ceil(width(word, size, bold)) + 2 * pad + 2,
                            ascent + descent + 2 * pad), 0)
    origin = (pad, pad + ascent)
    fonts.draw_line(ImageDraw.Draw(image), origin, word, size, bold=bold, fill=255)
    return Mask(image, origin)


def draw(canvas: Image.Image, origin: tuple[float, float], line: str, size: int,
         fill: int | tuple[int, ...], bold: bool = False) -> None:
    """Draw `line` with its baseline starting at `origin`, in the solid colour `fill`."""
    left, baseline = origin
    for x, word in positions(line, size, bold):
        piece = mask(word, size, bold)
        corner = (round(left + x) - piece.origin[0], round(baseline) - piece.origin[1])
        canvas.paste(fill, (*corner, corner[0] + piece.image.width,
                            corner[1] + piece.image.height), piece.image)

"""Fonts for the watermark, with per-character fallback so that names in any script are drawn.

Pillow draws a run of text with one font and shows a missing glyph as a box (tofu). Viewer names
come in every script, so each character is drawn with the first font of a chain that has it:
DejaVu Sans (Latin, Greek, Cyrillic, ...) from `fonts-dejavu-core`, then a CJK font. The CJK font
of choice is Droid Sans Fallback (`fonts-droid-fallback`, 1.8 MB download, against 56 MB for Noto
CJK); Noto CJK and WenQuanYi are used instead when they are what is installed. A missing font is
skipped, and without any of them Pillow's built-in font is used, so rendering never fails on fonts.
"""

from __future__ import annotations

import functools
import os
import unicodedata
from collections.abc import Iterator

from PIL import ImageDraw, ImageFont

_DEJAVU = "/usr/share/fonts/truetype/dejavu/"
REGULAR = (_DEJAVU + "DejaVuSans.ttf",)
BOLD = (_DEJAVU + "DejaVuSans-Bold.ttf", _DEJAVU + "DejaVuSans.ttf")
FALLBACKS = (
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",  # fonts-droid-fallback
    "/usr/share/fonts-droid-fallback/truetype/DroidSansFallback.ttf",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",  # fonts-noto-cjk
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",  # fonts-wqy-zenhei
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",  # fonts-wqy-microhei
)
# A code point no font maps (plane 16 private use): its rendering is the font's .notdef box.
_NOTDEF_PROBE = "\U0010fffd"
_PROBE_SIZE = 24

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@functools.cache
def font_paths(bold: bool = False) -> tuple[str, ...]:
    """Installed fonts in fallback order: the primary face first, then the first CJK font found.

    Looked up once per process: fonts are installed with the package's system dependencies.
    """
    primary = next((p for p in (BOLD if bold else REGULAR) if os.path.exists(p)), None)
    fallback = next((p for p in FALLBACKS if os.path.exists(p)), None)
    return tuple(p for p in (primary, fallback) if p is not None)


@functools.lru_cache(maxsize=64)
def font_chain(size: int, bold: bool = False) -> tuple[Font, ...]:
    """Loaded fonts for one pixel size, cached per process (loading a face costs milliseconds)."""
    chain = tuple(ImageFont.truetype(path, size) for path in font_paths(bold))
    return chain or (ImageFont.load_default(size),)


@functools.lru_cache(maxsize=8192)
def has_glyph(path: str, char: str) -> bool:
    """Whether the font at `path` maps `char` to a real glyph rather than .notdef."""
    font, notdef = _probe(path)
    return _signature(font, char) != notdef


@functools.lru_cache(maxsize=16)
def _probe(path: str) -> tuple[ImageFont.FreeTypeFont, tuple[object, ...]]:
    font = ImageFont.truetype(path, _PROBE_SIZE)
    return font, _signature(font, _NOTDEF_PROBE)


def _signature(font: ImageFont.FreeTypeFont, text: str) -> tuple[object, ...]:
    mask = font.getmask(text)
    return mask.size, bytes(mask), font.getlength(text)


def _font_index(char: str, paths: tuple[str, ...], current: int) -> int:
    # Spaces and combining marks stay with the run they are in, so accents sit on their letter.
    if char.isspace() or unicodedata.combining(char):
        return current
    for index, path in enumerate(paths):
        if has_glyph(path, char):
            return index
    return 0


def runs(text: str, bold: bool = False) -> Iterator[tuple[str, int]]:
    """Split `text` into (substring, index in the font chain) runs."""
    paths = font_paths(bold)
    if len(paths) < 2:
        if text:
            yield text, 0
        return
    start, current = 0, 0
    for position, char in enumerate(text):
        index = _font_index(char, paths, current)
        if index != current and position > start:
            yield text[start:position], current
            start = position
        current = index
    if start < len(text):
        yield text[start:], current


@functools.lru_cache(maxsize=64)
def metrics(size: int, bold: bool = False) -> tuple[int, int]:
    """(ascent, descent) in pixels that fit every font of the chain at `size`."""
    pairs = [font.getmetrics() for font in font_chain(size, bold)
             if isinstance(font, ImageFont.FreeTypeFont)]
    if not pairs:
        return size, size // 3
    return max(a for a, _ in pairs), max(d for _, d in pairs)


def text_width(text: str, size: int, bold: bool = False) -> float:
    chain = font_chain(size, bold)
    return sum(chain[index].getlength(run) for run, index in runs(text, bold))


def draw_line(
    draw: ImageDraw.ImageDraw,
    origin: tuple[float, float],
    text: str,
    size: int,
    *,
    bold: bool = False,
    fill: int | tuple[int, ...] = (0, 0, 0),
    stroke_width: int = 0,
    stroke_fill: tuple[int, ...] | None = None,
) -> None:
    """Draw one line whose baseline starts at `origin`, switching fonts run by run."""
    chain = font_chain(size, bold)
    x, baseline = origin
    for run, index in runs(text, bold):
        font = chain[index]
        draw.text(
            (x, baseline), run, font=font, fill=fill, anchor="ls",
            stroke_width=stroke_width, stroke_fill=stroke_fill,
        )
        x += font.getlength(run)


def wrap(text: str, size: int, max_width: float, bold: bool = False) -> list[str]:
    """Greedy word wrap by measured width; a word wider than the line is cut by characters."""
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if text_width(candidate, size, bold) <= max_width:
            current = candidate
            continue
        if current:
            lines.append(current)
        pieces = _cut(word, size, max_width, bold)
        lines.extend(pieces[:-1])
        current = pieces[-1]
    lines.append(current)
    return lines


def _cut(word: str, size: int, max_width: float, bold: bool) -> list[str]:
    pieces = [""]
    for char in word:
        if pieces[-1] and text_width(pieces[-1] + char, size, bold) > max_width:
            pieces.append("")
        pieces[-1] += char
    return pieces

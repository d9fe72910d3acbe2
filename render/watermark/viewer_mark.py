"""The viewer watermark burned into every page (interface spec 1.2).

The same facts appear twice:

1. a diagonal pattern over the whole page (`render.watermark.pattern`): the text is composed once
per
   request into a small tile and pasted along a lattice;
2. plain text in an opaque strip *below* the page. The canvas is taller than the page rather than
   the page overlaid, so no document content is hidden and the strip always has a clean
   background (it is read by people and by OCR in the tests).

Viewer-supplied values are cleaned first: control and format characters are removed (no bidi
overrides flipping an address around, no newlines forging extra lines) and long values are cut.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol

from PIL import Image, ImageDraw

from render.forensic import placement
from render.forensic.embed import PaperMark, embed_into, ink_chips, paper_mark_for
from render.forensic.layout import keyed
from render.forensic_wire.trace_codes import trace_code
from render.watermark import pattern, words
from render.wire.model import WatermarkSpec

TILE_LINE_CHARS = 48  # the pattern repeats a shortened text; the strip carries it in full
# Grey levels of the strip.
STRIP_BACKGROUND = 246
STRIP_RULE = 170
STRIP_TEXT = 17

# Caps per field. 100 is the spec's viewer-name limit; 254 the longest valid email address.
_LIMITS = {"name": 100, "email": 254, "ip": 45, "brand": 80, "displayed_at": 64}
# Format characters are dropped except the joiners some scripts need to spell names right.
_KEEP_FORMAT = {"\u200c", "\u200d"}
_DROP_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn"}
_BREAKS = {"Zl", "Zp"}


class Surface(Protocol):
    """What the watermark is drawn on: a page's image and the buffer under it
    (`render.page.canvas.Canvas`, which lays its strip out with this module, so the page
    package depends on this one and not the other way round)."""

    @property
    def image(self) -> Image.Image: ...

    @property
    def pixels(self) -> bytearray: ...

    @property
    def stride(self) -> int: ...


@functools.lru_cache(maxsize=256)
def clean(value: str | None, limit: int) -> str:
    """`value` without control/format characters, whitespace collapsed, cut to `limit`.

    Cached: a viewer's name, email and brand come back on every page.
    """
    text = re.sub(r"\s+", " ", "".join(_clean_char(c) for c in value or "")).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _clean_char(char: str) -> str:
    if char in _KEEP_FORMAT:
        return char
    category = unicodedata.category(char)
    if char.isspace() or category in _BREAKS:
        return " "  # a newline in a name becomes a space, never a forged extra line
    return "" if category in _DROP_CATEGORIES else char


def strip_lines(mark: WatermarkSpec) -> list[str]:
    """The plain-text lines of the bottom strip, before wrapping."""
    name, email, ip, brand, when = _fields(mark)
    viewer = f"Viewer: {name} <{email}>" if name else f"Viewer: {email}"
    shown = f"Displayed: {when}" + (f" · IP: {ip}" if ip else "")
    return [f"Confidential — {brand}", viewer, shown]


TRACE_LABEL = "Trace code: "
_SEPARATOR = " · "
_WIDEST_CODE = "WWWW-WWWW-WW"  # room kept for any trace code


def _space(size: int) -> float:
    # line_width() does not count a trailing space; a space is the difference it makes inside.
    return words.line_width("x x", size) - words.line_width("xx", size)


def tile_lines(mark: WatermarkSpec) -> list[str]:
    name, email, ip, brand, when = _fields(mark)
    lines = [f"Confidential — {brand}", name, email, when, f"IP {ip}" if ip else ""]
    return [_shorten(line, TILE_LINE_CHARS) for line in lines if line]


def _fields(mark: WatermarkSpec) -> tuple[str, str, str, str, str]:
    return (
        clean(mark.viewer_name, _LIMITS["name"]),
        clean(mark.viewer_email, _LIMITS["email"]),
        clean(mark.ip, _LIMITS["ip"]),
        clean(mark.brand, _LIMITS["brand"]) or "vaultd",
        clean(mark.displayed_at, _LIMITS["displayed_at"]),
    )


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Strip:
    """The bottom strip laid out for one canvas width: wrapped lines and their metrics."""

    lines: tuple[str, ...]
    size: int  # font size in px
    pad: int
    line_height: int
    # Where a page's trace code goes (x, row), after the first line when it fits there: the
    # same for every page of a viewer, so the drawn strip stays cached and only the code is
    # drawn per page (`apply`). None when the spec has no render id.
    code_at: tuple[float, int] | None = None

    @property
    def height(self) -> int:
        return 2 * self.pad + self.line_height * len(self.lines)


def strip_font_size(width: int) -> int:
    # At least 16 px: legible, and large enough for OCR at the narrowest canvas.
    return max(16, min(36, round(width / 70)))


def layout_strip(mark: WatermarkSpec, width: int) -> Strip:
    """Known before anything is rendered, so the page is drawn straight into the final canvas."""
    size = strip_font_size(width)
    pad = size
    room = width - 2 * pad
    first, *rest = [words.wrap(line, size, room) for line in strip_lines(mark)]
    code_at: tuple[float, int] | None = None
    if mark.render_id is not None:
        code_width = words.line_width(_SEPARATOR + TRACE_LABEL + _WIDEST_CODE, size)
        end = words.line_width(first[-1], size)
        if end + code_width <= room:
            first[-1] += _SEPARATOR.rstrip()  # the cached strip draws the " ·", a page its code
            code_at = (pad + words.line_width(first[-1], size) + _space(size), len(first) - 1)
        else:
            code_at = (pad, len(first))
            first = [*first, ""]
    wrapped = [part for parts in (first, *rest) for part in parts]
    return Strip(tuple(wrapped), size, pad, round(size * 1.4), code_at)


@dataclass(frozen=True)
class Overlay:
    """Both copies of the facts for one request, drawn but not yet on the page."""

    tile: pattern.Tile
    strip: Image.Image  # the whole strip, to be copied under the page
    strip_layout: Strip | None = None
    render_id: int | None = None  # this page's: its trace code is drawn by `apply`...
    mark_value: int | None = None  # ...and this embedded (the id, or its sealed value)
    # ...in this deployment's layout (its layout subkey; None: the published one)
    mark_layout: bytes | None = field(default=None, repr=False)
    placement_seed: bytes | None = field(default=None, repr=False)  # moves the pattern's words


def prepare(mark: WatermarkSpec, width: int, strip: Strip) -> Overlay:
    """Everything that does not need the page's pixels: the render runs meanwhile (pages.py)."""
    drawn = drawn_overlay(tuple(tile_lines(mark)), width, strip)
    if mark.render_id is None:
        return drawn
    embedded = mark.render_id if mark.mark_value is None else mark.mark_value
    return dataclasses.replace(drawn, render_id=mark.render_id, mark_value=embedded,
                               mark_layout=mark.mark_layout, placement_seed=mark.placement_seed)


@functools.lru_cache(maxsize=8)
def drawn_overlay(lines: tuple[str, ...], width: int, strip: Strip) -> Overlay:
    # Kept while its exact text recurs: pages a viewer asks for within the same second (the
    # timestamp's resolution) share one overlay. The key is every line of both copies, so a
    # kept overlay shows exactly the facts it was asked for.
    tile = pattern.make_tile(list(lines), pattern.font_size(width))
    image = Image.new("RGBX", (width, strip.height))
    _draw_strip(image, 0, strip)
    return Overlay(tile, image, strip)


def paper_mark(overlay: Overlay) -> PaperMark | None:
    """The mask and strength the page's paper is darkened with for this overlay's id (None
    when it carries none): what `canvas.from_rows` applies while it copies a kept page in."""
    if overlay.mark_value is None:
        return None
    return paper_mark_for(overlay.mark_value, keyed(overlay.mark_layout))


def apply(canvas: Surface, overlay: Overlay, page_height: int, paper_marked: bool = False) -> None:
    """Mark the paper (unless `paper_marked`: done while the page was copied in), blend the
    pattern over the page (the top `page_height` rows), then copy the strip under it."""
    if overlay.mark_value is not None and not paper_marked:
        # Under the pattern, as on a warm page: the same pixels whichever way the page came.
        embed_into(canvas.pixels, canvas.stride, (canvas.image.width, page_height),
                   overlay.mark_value, keyed(overlay.mark_layout))
    ink_mark = (None if overlay.mark_value is None
                else ink_chips(overlay.mark_value, keyed(overlay.mark_layout)))
    # The mark is in the pattern too: its letters' ink is darker on the mark's darkened chips.
    moves = None if overlay.placement_seed is None else placement.field(overlay.placement_seed)
    pattern.paste(canvas.pixels, canvas.stride, overlay.tile, (canvas.image.width, page_height),
                  ink_mark, moves)
    canvas.image.paste(overlay.strip, (0, page_height))
    strip = overlay.strip_layout
    if overlay.render_id is not None and strip is not None and strip.code_at is not None:
        _draw_code(canvas.image, page_height, strip, overlay.render_id)


def _draw_code(image: Image.Image, top: int, strip: Strip, render_id: int) -> None:
    """The trace code, one character at a time: each glyph's mask is cached (`words.mask`),
    where the whole code, new on every page, would be drawn from scratch."""
    assert strip.code_at is not None
    x, row = strip.code_at
    baseline = top + strip.pad + row * strip.line_height + strip.size
    words.draw(image, (x, baseline), TRACE_LABEL.strip(), strip.size, _grey(STRIP_TEXT))
    x += words.line_width(TRACE_LABEL, strip.size) + _space(strip.size)
    for char in trace_code(render_id):
        words.draw(image, (x, baseline), char, strip.size, _grey(STRIP_TEXT))
        x += words.width(char, strip.size)


def _grey(level: int) -> tuple[int, ...]:
    return (level, level, level, 255)


def _draw_strip(canvas: Image.Image, top: int, strip: Strip) -> None:
    draw = ImageDraw.Draw(canvas)
    draw.rectangle((0, top, canvas.width, canvas.height), fill=_grey(STRIP_BACKGROUND))
    draw.line([(0, top), (canvas.width, top)], fill=_grey(STRIP_RULE), width=2)
    for row, line in enumerate(strip.lines):
        baseline = top + strip.pad + row * strip.line_height + strip.size
        words.draw(canvas, (strip.pad, baseline), line, strip.size, _grey(STRIP_TEXT))

"""The viewer watermark burned into every page (interface spec 1.2).

The same facts appear twice:

1. a diagonal pattern over the whole page: the text is drawn once per request into a small tile,
   rotated once, and pasted along a lattice. Dark letters with a light outline at about a quarter
   opacity stay legible on white, black and photographic pages while the page stays readable;
2. plain text in an opaque strip added *below* the page. The canvas is extended rather than the
   page overlaid, so no document content is hidden and the strip always has a clean background
   (it is read by people and by OCR in the tests).

Viewer-supplied values are cleaned first: control and format characters are removed (no bidi
overrides flipping an address around, no newlines forging extra lines) and long values are cut.
"""

from __future__ import annotations

import math
import re
import unicodedata

from PIL import Image, ImageChops, ImageDraw, ImageFilter

from render import fonts
from render.model import PixelBudget, WatermarkSpec
from render.sizing import canvas_width

OPACITY = 0.25
ANGLE = 30  # degrees, counter-clockwise
TILE_LINE_CHARS = 48  # the pattern repeats a shortened text; the strip carries it in full
INK, HALO = 20, 255  # grey levels of the pattern's letters and of the glow around them
STRIP_BACKGROUND = (246, 246, 246)
STRIP_RULE = (170, 170, 170)
STRIP_TEXT = (17, 17, 17)

# Caps per field. 100 is the spec's viewer-name limit; 254 the longest valid email address.
_LIMITS = {"name": 100, "email": 254, "ip": 45, "brand": 80, "displayed_at": 64}
# Format characters are dropped except the joiners some scripts need to spell names right.
_KEEP_FORMAT = {"\u200c", "\u200d"}
_DROP_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn"}
_BREAKS = {"Zl", "Zp"}
Size = tuple[int, int]


def clean(value: str | None, limit: int) -> str:
    """`value` without control/format characters, whitespace collapsed, cut to `limit`."""
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


def apply(page: Image.Image, mark: WatermarkSpec, budget: PixelBudget) -> Image.Image:
    """The watermarked RGB image: page widened if very narrow, pattern over it, strip below.

    The pattern is drawn into `page` itself when it is RGB (no copy of a 2-MP image per request).
    """
    rgb = page if page.mode == "RGB" else page.convert("RGB")
    canvas = _widen(rgb, canvas_width(page.width, budget))
    _paste_pattern(canvas, tile_lines(mark))
    return _add_strip(canvas, strip_lines(mark))


def _widen(page: Image.Image, width: int) -> Image.Image:
    if page.width >= width:
        return page
    canvas = Image.new("RGB", (width, page.height), (255, 255, 255))
    canvas.paste(page, ((width - page.width) // 2, 0))
    return canvas


# --- the diagonal pattern -----------------------------------------------------------------------


def pattern_font_size(width: int) -> int:
    return max(14, min(48, round(width / 50)))


def make_tile(lines: list[str], size: int) -> tuple[Image.Image, Image.Image, Size]:
    """The text block drawn once and rotated: (colour, alpha) tiles and the unrotated block size.

    Only a one-band ink mask is drawn and rotated; the light halo is a blurred copy of it, which
    costs a fraction of FreeType's stroker and of rotating an RGBA image.
    """
    ink, block = _ink_mask(lines, size)
    ink = ink.rotate(ANGLE, resample=Image.Resampling.BILINEAR, expand=True)
    halo = ink.filter(ImageFilter.BoxBlur(max(1, size // 12))).point(lambda v: min(255, v * 4))
    alpha = ImageChops.lighter(halo, ink).point(lambda v: round(v * OPACITY))
    dark, light = Image.new("L", ink.size, INK), Image.new("L", ink.size, HALO)
    return Image.composite(dark, light, ink).convert("RGB"), alpha, block


def _ink_mask(lines: list[str], size: int) -> tuple[Image.Image, Size]:
    line_height = round(size * 1.3)
    pad = size // 2  # room for the halo
    width = math.ceil(max(fonts.text_width(line, size, True) for line in lines)) + 2 * pad
    block = (width, line_height * len(lines) + 2 * pad)
    mask = Image.new("L", block, 0)
    draw = ImageDraw.Draw(mask)
    for row, line in enumerate(lines):
        baseline = pad + row * line_height + round(size * 0.95)
        fonts.draw_line(draw, (pad, baseline), line, size, bold=True, fill=255)
    return mask, block


def lattice(canvas: Size, block: Size, tile: Size) -> list[Size]:
    """Top-left corners for the rotated tile: a brick lattice in the rotated frame.

    `block` is the unrotated text block size; copies are spaced a little wider than the block,
    and each row is shifted by half a block, so copies never overlap or line up in columns.
    """
    rad = math.radians(ANGLE)
    step_x, step_y = block[0] * 1.1, block[1] * 1.5
    # Lattice vectors in image coordinates (y grows downwards, rotation is counter-clockwise).
    ux, uy = step_x * math.cos(rad), -step_x * math.sin(rad)
    vx, vy = step_y * math.sin(rad) + ux / 2, step_y * math.cos(rad) + uy / 2
    reach = math.hypot(*canvas) / min(step_x, step_y) + 2
    corners = []
    for i in range(-int(reach), int(reach) + 1):
        for j in range(-int(reach), int(reach) + 1):
            cx, cy = i * ux + j * vx, i * uy + j * vy
            left, top = round(cx - tile[0] / 2), round(cy - tile[1] / 2)
            if -tile[0] < left < canvas[0] and -tile[1] < top < canvas[1]:
                corners.append((left, top))
    return corners


def _paste_pattern(canvas: Image.Image, lines: list[str]) -> None:
    size = pattern_font_size(canvas.width)
    colour, alpha, block = make_tile(lines, size)
    pieces = _slices(colour, alpha)
    # paste() clips at the edges and blends through the mask: a few C calls per copy, no
    # full-page overlay and no RGBA conversion of the page.
    for left, top in lattice(canvas.size, block, colour.size):
        for (dx, dy), piece, mask in pieces:
            canvas.paste(piece, (left + dx, top + dy), mask)


Piece = tuple[Size, Image.Image, Image.Image]  # offset in the tile, colour, mask


def _slices(colour: Image.Image, alpha: Image.Image, count: int = 4) -> list[Piece]:
    """The rotated tile cut into horizontal bands, each cropped to its ink.

    Diagonal text fills under half of its bounding box; pasting tight bands instead of the
    whole box halves the pixels blended per copy, the main cost of the pattern.
    """
    pieces = []
    for index in range(count):
        band = (0, alpha.height * index // count, alpha.width, alpha.height * (index + 1) // count)
        bbox = alpha.crop(band).getbbox()
        if bbox is not None:
            box = (bbox[0], band[1] + bbox[1], bbox[2], band[1] + bbox[3])
            pieces.append(((box[0], box[1]), colour.crop(box), alpha.crop(box)))
    return pieces


# --- the bottom strip ---------------------------------------------------------------------------


def strip_font_size(width: int) -> int:
    # At least 16 px: legible, and large enough for OCR at the narrowest canvas.
    return max(16, min(36, round(width / 70)))


def _add_strip(canvas: Image.Image, lines: list[str]) -> Image.Image:
    size = strip_font_size(canvas.width)
    pad, line_height = size, round(size * 1.4)
    wrapped = [part for line in lines for part in fonts.wrap(line, size, canvas.width - 2 * pad)]
    strip_height = 2 * pad + line_height * len(wrapped)
    out = Image.new("RGB", (canvas.width, canvas.height + strip_height), STRIP_BACKGROUND)
    out.paste(canvas, (0, 0))
    draw = ImageDraw.Draw(out)
    draw.line([(0, canvas.height), (canvas.width, canvas.height)], fill=STRIP_RULE, width=2)
    for row, line in enumerate(wrapped):
        baseline = canvas.height + pad + row * line_height + round(size * 1.0)
        fonts.draw_line(draw, (pad, baseline), line, size, fill=STRIP_TEXT)
    return out

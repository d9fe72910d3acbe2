"""The diagonal watermark pattern: a small tile drawn once per request, pasted along a lattice.

Drawing text is cheap; rotating it and blurring a halo around it are not (about 10 ms for a
whole tile, more than PDFium needs for a light page). So the tile is assembled from words that
were rotated once and kept: a word's rotated ink and halo depend only on its text and size, and
a viewer's name, email and brand repeat on every page. Only what changes is drawn afresh (the
seconds of the timestamp), and the tile itself, with this request's text, is still composed for
every request: nothing that carries a timestamp is ever reused.

Dark letters with a light halo at about a quarter opacity stay legible on white, black and
photographic pages while the page stays readable.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from PIL import Image, ImageChops, ImageFilter

from render import words

OPACITY = 0.25
ANGLE = 30  # degrees, counter-clockwise
INK, HALO = 20, 255  # grey levels of the pattern's letters and of the glow around them
BANDS = 16  # horizontal bands a tile is cut into, each cropped to its ink
_BOOST = [min(255, v * 4) for v in range(256)]  # blurred ink -> a solid, soft-edged halo
# Opacity; the faintest edge of the halo (under 2%) is dropped, which tightens every piece.
_ALPHA = [a if a >= 5 else 0 for a in (round(v * OPACITY) for v in range(256))]
# Ink coverage -> grey level: the ink's own grey on the letters, the halo's around them.
_COLOUR = [round(HALO + (INK - HALO) * v / 255) for v in range(256)]
Size = tuple[int, int]
Point = tuple[float, float]


def font_size(width: int) -> int:
    return max(14, min(48, round(width / 50)))


@dataclass(frozen=True)
class Word:
    """One word drawn upright, then rotated: its ink, its opacity (letters and halo), and where
    its baseline origin went."""

    ink: Image.Image
    alpha: Image.Image
    origin: Point  # the baseline origin of the word inside the rotated images


@dataclass(frozen=True)
class Tile:
    """The pattern for one request: pieces of the rotated text block, ready to paste."""

    pieces: list[tuple[Size, Image.Image, Image.Image]]  # offset in the tile, colour, alpha
    size: Size  # the rotated tile
    block: Size  # the text block before rotation (spacing of the lattice)


def _rotation() -> tuple[float, float]:
    rad = math.radians(ANGLE)
    return math.cos(rad), math.sin(rad)


def _rotate_point(point: Point, centre: Point, new_centre: Point) -> Point:
    # Image.rotate turns counter-clockwise on screen, where y grows downwards.
    cos, sin = _rotation()
    dx, dy = point[0] - centre[0], point[1] - centre[1]
    return new_centre[0] + cos * dx + sin * dy, new_centre[1] - sin * dx + cos * dy


def rotated_size(size: Size) -> Size:
    cos, sin = _rotation()
    width, height = size
    return math.ceil(width * cos + height * sin), math.ceil(width * sin + height * cos)


@functools.lru_cache(maxsize=512)
def word(text: str, size: int) -> Word:
    """`text` in bold at `size` px, rotated by ANGLE, with its halo (cached per process)."""
    upright = words.mask(text, size, bold=True, pad=max(2, size // 4))  # room for the halo
    ink = upright.image.rotate(ANGLE, resample=Image.Resampling.BILINEAR, expand=True)
    halo = ink.filter(ImageFilter.BoxBlur(max(1, size // 12))).point(_BOOST)
    alpha = ImageChops.lighter(halo, ink).point(_ALPHA)
    centre = (upright.image.width / 2, upright.image.height / 2)
    return Word(ink, alpha, _rotate_point(upright.origin, centre, (ink.width / 2, ink.height / 2)))


def make_tile(lines: list[str], size: int) -> Tile:
    """The text block for this request, rotated, as tight (colour, alpha) pieces."""
    line_height = round(size * 1.3)
    pad = size // 2
    width = math.ceil(max(words.line_width(line, size, True) for line in lines)) + 2 * pad
    block = (width, line_height * len(lines) + 2 * pad)
    tile = rotated_size(block)
    ink, alpha = Image.new("L", tile, 0), Image.new("L", tile, 0)
    centre, new_centre = (block[0] / 2, block[1] / 2), (tile[0] / 2, tile[1] / 2)
    for row, line in enumerate(lines):
        baseline = pad + row * line_height + round(size * 0.95)
        for x, text in words.positions(line, size, True):
            _place(ink, alpha, word(text, size), _rotate_point((pad + x, baseline), centre,
                                                               new_centre))
    return Tile(_slices(ink.point(_COLOUR), alpha), tile, block)


def _place(ink: Image.Image, alpha: Image.Image, piece: Word, anchor: Point) -> None:
    left = round(anchor[0] - piece.origin[0])
    top = round(anchor[1] - piece.origin[1])
    box = (left, top, left + piece.ink.width, top + piece.ink.height)
    # The rotated boxes of neighbouring words overlap: keep the stronger value, never the last.
    ink.paste(ImageChops.lighter(ink.crop(box), piece.ink), box)
    alpha.paste(ImageChops.lighter(alpha.crop(box), piece.alpha), box)


def _slices(colour: Image.Image, alpha: Image.Image) -> list[tuple[Size, Image.Image, Image.Image]]:
    """The tile cut into horizontal bands, each cropped to its ink and halo.

    Diagonal text fills under a third of its bounding box; pasting tight bands instead of the
    whole box blends a fraction of the pixels per copy, the main cost of the pattern.
    """
    pieces = []
    for index in range(BANDS):
        band = (0, alpha.height * index // BANDS, alpha.width, alpha.height * (index + 1) // BANDS)
        bbox = alpha.crop(band).getbbox()
        if bbox is not None:
            box = (bbox[0], band[1] + bbox[1], bbox[2], band[1] + bbox[3])
            pieces.append(((box[0], box[1]), colour.crop(box), alpha.crop(box)))
    return pieces


def lattice(canvas: Size, block: Size, tile: Size) -> list[Size]:
    """Top-left corners for the rotated tile: a brick lattice in the rotated frame.

    `block` is the unrotated text block size; copies are spaced a little wider than the block,
    and each row is shifted by half a block, so copies never overlap or line up in columns.
    """
    cos, sin = _rotation()
    step_x, step_y = block[0] * 1.1, block[1] * 1.5
    # Lattice vectors in image coordinates (y grows downwards, rotation is counter-clockwise).
    ux, uy = step_x * cos, -step_x * sin
    vx, vy = step_y * sin + ux / 2, step_y * cos + uy / 2
    reach = int(math.hypot(*canvas) / min(step_x, step_y) + 2)
    corners = []
    for i in range(-reach, reach + 1):
        for j in range(-reach, reach + 1):
            cx, cy = i * ux + j * vx, i * uy + j * vy
            left, top = round(cx - tile[0] / 2), round(cy - tile[1] / 2)
            if -tile[0] < left < canvas[0] and -tile[1] < top < canvas[1]:
                corners.append((left, top))
    return corners


def paste(canvas: Image.Image, tile: Tile, area: Size) -> None:
    """Blend the tile along the lattice over the top-left `area` of `canvas` (L, RGB or RGBX).

    Pieces are blended through their masks straight into the canvas (no full-page overlay, no
    conversion of the page). Copies may spill below `area`; the strip drawn there afterwards
    covers them.
    """
    pieces = [(offset, (colour if canvas.mode == "L" else colour.convert(canvas.mode)).im,
               alpha.im, colour.size) for offset, colour, alpha in tile.pieces]
    canvas.load()
    core = canvas.im
    # Pillow's C paste clips at the canvas edges itself; calling it directly skips per-call
    # argument checks that cost as much as blending a small piece (~300 pieces per page).
    for left, top in lattice(area, tile.block, tile.size):
        for (dx, dy), colour, alpha, (width, height) in pieces:
            x, y = left + dx, top + dy
            core.paste(colour, (x, y, x + width, y + height), alpha)

"""The diagonal watermark pattern: this request's text as a rotated block (the tile), blended
along a lattice over the page.

Rotating text and blurring a halo around it cost about 10 ms for a whole tile, more than PDFium
needs for a light page. A word's rotated pixels depend only on its text and size, so each word
is rotated once per worker process and kept, cut into tight bands; a viewer's name, email and
brand come back on every page, and a new second redraws only the time. A request's tile is then
those pieces at this request's positions, reused only for exactly the same text (pages asked for
within the same second, `watermark.drawn_overlay`).

Blending is the main cost left: pieces are cropped to where they have any opacity (about a
quarter of the page), and they are blended by `render.kernels.blend`: a small C loop over the
canvas's own buffer, five times faster than Pillow's paste (which it falls back to when no compiler
was available at install). Dark letters with a light halo at about a quarter opacity stay legible
on white, black and photographic pages while the page stays readable.

With the placement mark (`render.forensic.placement`), each word of each copy is pasted up to a
pixel off its place: one blend call per word of the tile, every copy's corner moved by the
field's value under that copy of the word.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from PIL import Image, ImageChops, ImageFilter

from render.forensic.placement import Field, cells
from render.kernels import blend
from render.watermark import words

OPACITY = 0.25
ANGLE = 30  # degrees, counter-clockwise
INK, HALO = 20, 255  # grey levels of the pattern's letters and of the glow around them
_BOOST = [min(255, v * 4) for v in range(256)]  # blurred ink -> a solid, soft-edged halo
# Opacity; the faintest edge of the halo (under 2%) is dropped, which tightens every piece.
_ALPHA = [a if a >= 5 else 0 for a in (round(v * OPACITY) for v in range(256))]
# Ink coverage -> grey level: the ink's own grey on the letters, the halo's around them.
_COLOUR = [round(HALO + (INK - HALO) * v / 255) for v in range(256)]
# Ink coverage -> opacity added on the chips the invisible mark darkens and taken off the
# others: the letters' ink is what survives a raised brightness or contrast
# (docs/leak-tracing.md), so the mark is stronger there: 2 x INK_MARK x 235 / 255 grey levels
# between the two on white paper, plus the mark's own 2.3. Both ways rather than darkening
# only: the same difference for half the squared error (PSNR).
INK_MARK = 4
_INK_MARK = [round(INK_MARK * v / 255) for v in range(256)]
Size = tuple[int, int]
Point = tuple[float, float]


def font_size(width: int) -> int:
    return max(14, min(48, round(width / 50)))


class Piece(NamedTuple):
    """A band of a rotated word, placed relative to the word's origin (or the tile's corner).

    Its grey colour and its opacity are RGBX planes, four bytes a pixel like the canvas, with no
    opacity on the X byte: the tuple is exactly what `render.kernels.blend.paste` reads.
    """

    dx: int
    dy: int
    width: int
    height: int
    colour: bytes
    alpha: bytes


class MarkedPiece(NamedTuple):
    """A Piece as blended on a page carrying the invisible mark (`render.forensic.embed`): the
    letters' ink a little lighter (`alpha`) on the chips the mark leaves alone, a little darker
    (`marked`) on those it darkens; the halo as in the Piece. What `render.kernels.blend.paste`
    reads with a chip mask."""

    dx: int
    dy: int
    width: int
    height: int
    colour: bytes
    alpha: bytes
    marked: bytes


@dataclass(frozen=True)
class Tile:
    """The pattern for one request: every piece of the rotated text block, ready to paste."""

    pieces: list[Piece]  # offsets relative to the tile's top-left corner
    size: Size  # the rotated tile
    block: Size  # the text block before rotation (spacing of the lattice)
    marked_pieces: list[MarkedPiece]  # the same, for a page carrying the invisible mark
    words: tuple[WordSpan, ...] = ()  # which pieces make each word (the placement mark)


class WordSpan(NamedTuple):
    """A word's pieces (`Tile.pieces[start:end]`, the same in `marked_pieces`) and its
    centre in the tile: the placement mark moves a word by the field's value there."""

    start: int
    end: int
    centre: Point


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


class Word(NamedTuple):
    """A word's bands, plain and with the invisible mark's two opacities on its letters."""

    plain: tuple[Piece, ...]
    marked: tuple[MarkedPiece, ...]


@functools.lru_cache(maxsize=1024)
def word(text: str, size: int) -> Word:
    """`text` in bold at `size` px, rotated by ANGLE, with its halo, cut into tight bands.

    Cached per process: a word's pixels depend only on its text and size.
    """
    upright = words.mask(text, size, bold=True, pad=max(2, size // 4))  # room for the halo
    ink = upright.image.rotate(ANGLE, resample=Image.Resampling.BILINEAR, expand=True)
    halo = ink.filter(ImageFilter.BoxBlur(max(1, size // 12))).point(_BOOST)
    alpha = ImageChops.lighter(halo, ink).point(_ALPHA)
    colour = ink.point(_COLOUR).convert("RGBX")
    centre = (upright.image.width / 2, upright.image.height / 2)
    origin = _rotate_point(upright.origin, centre, (ink.width / 2, ink.height / 2))
    return _bands(colour, alpha, ink.point(_INK_MARK), (round(origin[0]), round(origin[1])),
                  max(4, size // 2))


def _plane(opacity: Image.Image) -> bytes:
    """An opacity as the blend reads it: on R, G and B, none on X."""
    none = Image.new("L", opacity.size)
    return Image.merge("RGBA", (opacity, opacity, opacity, none)).tobytes()


def _bands(colour: Image.Image, alpha: Image.Image, shift: Image.Image, origin: Size,
           height: int) -> Word:
    """Horizontal bands of a rotated word, each cropped to where it has any opacity, plain and
    with the mark's opacities (`shift`: what the mark adds to or takes off the letters).

    Diagonal text fills a small part of its bounding box; blending tight bands instead of the
    whole box is what keeps the pattern cheap (blending is its main cost).
    """
    pieces, marked = [], []
    for top in range(0, alpha.height, height):
        band = (0, top, alpha.width, min(top + height, alpha.height))
        bbox = alpha.crop(band).getbbox()
        if bbox is not None:
            box = (bbox[0], top + bbox[1], bbox[2], top + bbox[3])
            opacity, stroke = alpha.crop(box), shift.crop(box)
            piece = Piece(box[0] - origin[0], box[1] - origin[1], *opacity.size,
                          colour.crop(box).tobytes(), _plane(opacity))
            pieces.append(piece)
            marked.append(MarkedPiece(*piece[:5], _plane(ImageChops.subtract(opacity, stroke)),
                                      _plane(ImageChops.add(opacity, stroke))))
    return Word(tuple(pieces), tuple(marked))


class PlacedWord(NamedTuple):
    """A word of the text block at its place in the rotated tile (the pieces' offsets are
    relative to `at`)."""

    at: tuple[int, int]
    word: Word


def block_size(lines: list[str], size: int) -> Size:
    """The text block before rotation: the widest line and every line's height, padded."""
    pad = size // 2
    width = math.ceil(max(words.line_width(line, size, True) for line in lines)) + 2 * pad
    return width, round(size * 1.3) * len(lines) + 2 * pad


def placed_words(lines: list[str], size: int) -> list[PlacedWord]:
    """Every word of the block, rotated, at its place in the rotated tile."""
    line_height, pad = round(size * 1.3), size // 2
    block = block_size(lines, size)
    tile = rotated_size(block)
    centre, new_centre = (block[0] / 2, block[1] / 2), (tile[0] / 2, tile[1] / 2)
    placed = []
    for row, line in enumerate(lines):
        baseline = pad + row * line_height + round(size * 0.95)
        for x, text in words.positions(line, size, True):
            ax, ay = _rotate_point((pad + x, baseline), centre, new_centre)
            placed.append(PlacedWord((round(ax), round(ay)), word(text, size)))
    return placed


def make_tile(lines: list[str], size: int) -> Tile:
    """This request's text block, rotated: the pieces of its words at their places."""
    block = block_size(lines, size)
    pieces: list[Piece] = []
    marked: list[MarkedPiece] = []
    spans = []
    for (ax, ay), (plain, with_mark) in placed_words(lines, size):
        in_tile = [piece._replace(dx=ax + piece.dx, dy=ay + piece.dy) for piece in plain]
        if in_tile:
            box = (min(p.dx for p in in_tile), min(p.dy for p in in_tile),
                   max(p.dx + p.width for p in in_tile), max(p.dy + p.height for p in in_tile))
            spans.append(WordSpan(len(pieces), len(pieces) + len(in_tile),
                                  ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)))
        pieces += in_tile
        marked += [piece._replace(dx=ax + piece.dx, dy=ay + piece.dy) for piece in with_mark]
    return Tile(pieces, rotated_size(block), block, marked, tuple(spans))


@functools.lru_cache(maxsize=64)
def lattice(canvas: Size, block: Size, tile: Size) -> tuple[Size, ...]:
    """Top-left corners for the rotated tile: a brick lattice in the rotated frame.

    `block` is the unrotated text block size; copies are spaced a little wider than the block,
    and each row is shifted by half a block, so copies never overlap or line up in columns.
    Cached: a page size and a viewer's text block come back on every page.
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
    return tuple(corners)


def paste(pixels: bytearray, stride: int, tile: Tile, area: Size,
          mark: tuple[bytes, int, int] | None = None, moves: Field | None = None) -> None:
    """Blend the tile along the lattice over the top-left `area` of an RGBX canvas, in place.

    `pixels` is the canvas's buffer, `stride` bytes a row. Copies are clipped to `area`, so the
    strip below the page is left alone. Neighbouring words' halos may meet, where they are
    blended twice. `mark`: the invisible mark's chips (`render.forensic.embed.ink_chips`): the
    letters are then a little darker on its darkened chips, a little lighter elsewhere.
    `moves`: the placement mark's field (`render.forensic.placement`): each word of each copy
    moved by its value under the word's centre.
    """
    corners = lattice(area, tile.block, tile.size)
    pieces: list[Piece] | list[MarkedPiece] = tile.pieces if mark is None else tile.marked_pieces
    extra = () if mark is None else (mark,)
    if moves is None:
        blend.paste(pixels, stride, area, corners, pieces, *extra)
        return
    for span, placed in zip(tile.words, _moved_corners(tile, corners, moves, area[0]),
                            strict=True):
        # A word's pieces at every copy's corner, each corner moved by the word's offset there.
        blend.paste(pixels, stride, area, placed, pieces[span.start: span.end], *extra)


def _moved_corners(tile: Tile, corners: tuple[Size, ...], moves: Field, width: int
                   ) -> list[list[Size]]:
    """Per word, every copy's corner moved by the field's value under that copy of the word."""
    origin = np.array(corners, dtype=np.float64).reshape(-1, 2)
    centres = np.array([span.centre for span in tile.words], dtype=np.float64).reshape(-1, 2)
    xs = origin[:, None, 0] + centres[None, :, 0]  # (copies, words)
    ys = origin[:, None, 1] + centres[None, :, 1]
    offsets = moves.reshape(-1, 2)[cells(xs.ravel(), ys.ravel(), width)].reshape(*xs.shape, 2)
    placed = origin.astype(np.int64)[:, None, :] + offsets  # (copies, words, 2)
    return [[(int(x), int(y)) for x, y in placed[:, word]] for word in range(len(tile.words))]

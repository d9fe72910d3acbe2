"""Adding the mark: the id's tile, darkened chips only, blended over the page along a lattice.

The tile is a set of `render.blend` pieces (black at opacity STRENGTH/255, one per run of
darkened chips), pasted at every corner of a TILE-pixel lattice by the same blend as the visible
pattern (the C loop, or Pillow's paste where no compiler was available): about 1 ms for a 2 MP
page with the C loop. Darkening scales with the pixel (a
multiply towards black), so white paper moves by STRENGTH grey levels and black text not at all.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from PIL import Image

from render import blend
from render.forensic.layout import CHIP, TILE, TILE_CHIPS, chip_bits

STRENGTH = 3  # grey levels on white; 3 keeps PSNR above 40 dB with room for rounding

Piece = tuple[int, int, int, int, bytes, bytes]


@functools.cache
def _planes(width: int) -> tuple[bytes, bytes]:
    """Colour (black) and opacity (STRENGTH on R, G, B; 0 on X) of a CHIP-high run of darkened
    chips `width` px wide. Built by repetition, so their memory is written: blending from
    never-touched calloc'd pages (bytes(n)) measured several times slower."""
    pixels = width * CHIP
    return b"\0" * (pixels * 4), bytes((STRENGTH, STRENGTH, STRENGTH, 0)) * pixels


@functools.lru_cache(maxsize=64)
def tile_pieces(render_id: int) -> tuple[Piece, ...]:
    """The id's tile as `_blend` pieces, one per horizontal run of darkened chips: only the
    darkened half of the page is blended, from small planes shared by every id."""
    chips = chip_bits(render_id).reshape(TILE_CHIPS, TILE_CHIPS).tolist()
    pieces: list[Piece] = []
    for row, bits in enumerate(chips):
        column = 0
        while column < TILE_CHIPS:
            if not bits[column]:
                column += 1
                continue
            end = column
            while end < TILE_CHIPS and bits[end]:
                end += 1
            width = (end - column) * CHIP
            pieces.append((column * CHIP, row * CHIP, width, CHIP, *_planes(width)))
            column = end
    return tuple(pieces)


@functools.lru_cache(maxsize=64)
def ink_chips(render_id: int) -> tuple[bytes, int, int]:
    """The id's darkened chips as the mask `render.blend.paste` reads (cells, chip, chips):
    the visible pattern's letters are blended a little darker on them (`render.pattern`)."""
    return chip_bits(render_id).tobytes(), CHIP, TILE_CHIPS


def _corners(area: tuple[int, int]) -> list[tuple[int, int]]:
    width, height = area
    return [(x, y) for y in range(0, height, TILE) for x in range(0, width, TILE)]


def embed_into(pixels: bytearray, stride: int, area: tuple[int, int], render_id: int) -> None:
    """Mark the top-left `area` (width, height) of an RGBX buffer in place."""
    blend.paste(pixels, stride, area, _corners(area), tile_pieces(render_id))


def embed(image: Image.Image | npt.NDArray[np.uint8], render_id: int) -> Image.Image:
    """A marked RGB copy of `image` (a PIL image or an H x W x 3 uint8 array)."""
    source = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    rgbx = source.convert("RGB").convert("RGBX")
    buffer = bytearray(rgbx.tobytes())
    embed_into(buffer, rgbx.width * 4, rgbx.size, render_id)
    return Image.frombytes("RGBX", rgbx.size, bytes(buffer)).convert("RGB")

"""Adding the mark: the id's tile, darkened chips only, blended over the page along a lattice.

The tile is a single `render._blend` piece (black at opacity STRENGTH/255 on the darkened chips,
zero opacity elsewhere), pasted at every corner of a TILE-pixel lattice by the same C loop that
blends the visible pattern: about 1 ms for a 2 MP page. Darkening scales with the pixel (a
multiply towards black), so white paper moves by STRENGTH grey levels and black text not at all.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from PIL import Image

from render import _blend  # type: ignore[attr-defined]  # C extension, no stub
from render.forensic.layout import CHIP, TILE, TILE_CHIPS, chip_bits

STRENGTH = 3  # grey levels on white; 3 keeps PSNR above 40 dB with room for rounding
_ONE_CHIP = np.ones((CHIP, CHIP), dtype=np.uint8)

Piece = tuple[int, int, int, int, bytes, bytes]


@functools.cache
def _black_plane() -> bytes:
    return b"\0" * (TILE * TILE * 4)  # written, not calloc'd: see tile_piece


@functools.lru_cache(maxsize=64)
def tile_piece(render_id: int) -> Piece:
    """The id's tile as a `_blend` piece: (dx, dy, width, height, colour, alpha) in RGBX."""
    chips = chip_bits(render_id).reshape(TILE_CHIPS, TILE_CHIPS) * np.uint8(STRENGTH)
    alpha = np.zeros((TILE, TILE, 4), dtype=np.uint8)
    alpha[..., :3] = np.kron(chips, _ONE_CHIP)[..., None]
    return (0, 0, TILE, TILE, _black_plane(), alpha.tobytes())


def _corners(area: tuple[int, int]) -> list[tuple[int, int]]:
    width, height = area
    return [(x, y) for y in range(0, height, TILE) for x in range(0, width, TILE)]


def embed_into(pixels: bytearray, stride: int, area: tuple[int, int], render_id: int) -> None:
    """Mark the top-left `area` (width, height) of an RGBX buffer in place."""
    _blend.paste(pixels, stride, area, _corners(area), [tile_piece(render_id)])


def embed(image: Image.Image | npt.NDArray[np.uint8], render_id: int) -> Image.Image:
    """A marked RGB copy of `image` (a PIL image or an H x W x 3 uint8 array)."""
    source = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    rgbx = source.convert("RGB").convert("RGBX")
    buffer = bytearray(rgbx.tobytes())
    embed_into(buffer, rgbx.width * 4, rgbx.size, render_id)
    return Image.frombytes("RGBX", rgbx.size, bytes(buffer)).convert("RGB")

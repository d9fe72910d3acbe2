"""Adding the mark: the id's chips darkened on the page, the tile repeated from (0, 0).

The page's R, G, B bytes on every darkened chip are multiplied by (255 - STRENGTH) / 255
(`render.kernels.blend.darken`, a C loop): a multiply towards black, so white paper moves by
STRENGTH grey levels and black text not at all. A warm page gets it while its kept rows are copied
into the canvas (`render.page.canvas.from_rows`), which writes every pixel anyway; either way the
mark lies under the visible pattern, whose letters carry it too (`ink_chips`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic.layout import CHIP, PUBLIC, TILE_CHIPS, Layout
from render.kernels import blend

STRENGTH = 3  # grey levels on white; 3 keeps PSNR above 40 dB with room for rounding

ChipMask = tuple[bytes, int, int]


class PaperMark(NamedTuple):
    """The mark as the paper gets it: the id's chips, darkened by `strength` grey levels on
    white (the arguments `render.kernels.blend.darken` and `expand_grey` take)."""

    mask: ChipMask
    strength: int


@functools.lru_cache(maxsize=64)
def ink_chips(render_id: int, plan: Layout = PUBLIC) -> ChipMask:
    """The id's darkened chips as the mask `render.kernels.blend` reads (cells, chip, chips): the
    paper is darkened on them (`embed_into`), and the visible pattern's letters are blended a
    little darker on them (`render.watermark.pattern`)."""
    return plan.chip_bits(render_id).tobytes(), CHIP, TILE_CHIPS


def paper_mark_for(render_id: int, plan: Layout = PUBLIC) -> PaperMark:
    return PaperMark(ink_chips(render_id, plan), STRENGTH)


def embed_into(pixels: bytearray, stride: int, area: tuple[int, int], render_id: int,
               plan: Layout = PUBLIC) -> None:
    """Mark the top-left `area` (width, height) of an RGBX buffer in place, in `plan`'s
    layout (the deployment's; the published one by default)."""
    blend.darken(pixels, stride, area, *paper_mark_for(render_id, plan))


def embed(image: Image.Image | npt.NDArray[np.uint8], render_id: int,
          plan: Layout = PUBLIC) -> Image.Image:
    """A marked RGB copy of `image` (a PIL image or an H x W x 3 uint8 array)."""
    source = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    rgbx = source.convert("RGB").convert("RGBX")
    buffer = bytearray(rgbx.tobytes())
    embed_into(buffer, rgbx.width * 4, rgbx.size, render_id, plan)
    return Image.frombytes("RGBX", rgbx.size, bytes(buffer)).convert("RGB")

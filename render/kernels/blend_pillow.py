"""The watermark blend without a compiler: Pillow's masked paste, piece by piece.

Used when the C extension was not built (an install without a C toolchain, see
`render/kernels/blend.py`). Pillow's paste is the reference the C loop was written against: the RGB
bytes are identical (the tests compare both with it); only the X byte, which the JPEG encoder
drops, may differ. It is about six times slower than the C loop and the fastest of the pure
candidates measured (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

PIXEL_BYTES = 4
MAX_STRENGTH = 4  # the C loop's limit (the mark is faint by design), kept here alike
# dx, dy, colour, opacity, and the opacity on the mask's chips (None: the same)
Piece = tuple[int, int, Image.Image, Image.Image, Image.Image | None]


def paste(canvas: Any, stride: int, area: tuple[int, int], corners: Sequence[Any],
          pieces: Sequence[Any], mask: Any = None) -> None:
    """Blend every piece at every corner into the RGBX `canvas`, clipped to `area`.

    Same contract as `render.kernels._blend.paste`: everything is checked before any pixel is
    touched.
    """
    view = _writable(canvas, stride, area)
    right, bottom = area
    checked_corners = [_corner(corner) for corner in corners]
    switch = None if mask is None else _switch(mask, area)
    checked_pieces = [_piece(piece) for piece in pieces]
    if right == 0 or bottom == 0 or not checked_corners or not checked_pieces:
        return
    page = Image.frombuffer("RGBX", area, view, "raw", "RGBX", stride, 1)  # type: ignore[arg-type]
    page.readonly = False  # paste into the canvas's buffer itself, as render/page/canvas.py does
    for left, top in checked_corners:
        for dx, dy, colour, opacity, marked in checked_pieces:
            used = opacity
            if switch is not None and marked is not None:
                box = (left + dx, top + dy, left + dx + colour.width, top + dy + colour.height)
                used = Image.composite(marked, opacity, switch.crop(box))
            page.paste(colour, (left + dx, top + dy), used)


def _writable(canvas: Any, stride: int, area: tuple[int, int]) -> memoryview:
    """The canvas's bytes, once it is known to be writable and to hold the area."""
    view = memoryview(canvas).cast("B")
    if view.readonly:
        raise TypeError("the canvas must be a writable buffer")
    right, bottom = area
    if right < 0 or bottom < 0 or stride < right * PIXEL_BYTES or view.nbytes < stride * bottom:
        raise ValueError("the area does not fit the canvas")
    return view


def _switch(mask: Any, area: tuple[int, int]) -> Image.Image:
    """The mask (cells, chip, chips) drawn over `area`: 255 where a piece's `marked` opacity
    applies, 0 elsewhere (and outside the area, where nothing is drawn anyway)."""
    if not isinstance(mask, tuple):
        raise TypeError("the mask must be a tuple (cells, chip, chips)")
    if len(mask) != 3 or not isinstance(mask[1], int) or not isinstance(mask[2], int):
        raise TypeError("the mask is (cells, chip, chips)")
    cells, chip, chips = mask
    if not 0 < chip <= 4096 or not 0 < chips <= 4096 or len(cells) != chips * chips:
        raise ValueError("the mask's cells do not match its size")
    period = chip * chips
    tile = Image.frombytes("L", (chips, chips), bytes(b and 255 for b in bytes(cells)))
    tile = tile.resize((period, period), Image.Resampling.NEAREST)
    switch = Image.new("L", (max(1, area[0]), max(1, area[1])))
    for top in range(0, area[1], period):
        for left in range(0, area[0], period):
            switch.paste(tile, (left, top))
    return switch


def _corner(corner: Any) -> tuple[int, int]:
    if not isinstance(corner, tuple):
        raise TypeError("a corner must be a tuple")
    if len(corner) != 2 or not all(isinstance(value, int) for value in corner):
        raise TypeError("a corner is (left, top)")
    return corner[0], corner[1]


def _piece(piece: Any) -> Piece:
    if not isinstance(piece, tuple):
        raise TypeError("a piece must be a tuple")
    if len(piece) not in (6, 7) or not all(isinstance(value, int) for value in piece[:4]):
        raise TypeError("a piece is (dx, dy, width, height, colour, alpha[, marked])")
    dx, dy, width, height, colour, alpha = piece[:6]
    marked = piece[6] if len(piece) == 7 else None
    size = width * height * PIXEL_BYTES
    if width < 0 or height < 0 or len(colour) != size or len(alpha) != size or (
            marked is not None and len(marked) != size):
        raise ValueError("a piece's planes do not match its size")
    if width == 0 or height == 0:
        return dx, dy, Image.new("RGBX", (0, 0)), Image.new("L", (0, 0)), None
    opacity = Image.frombytes("RGBX", (width, height), alpha).getchannel(0)
    marked_opacity = None if marked is None else Image.frombytes(
        "RGBX", (width, height), marked).getchannel(0)
    return dx, dy, Image.frombytes("RGBX", (width, height), colour), opacity, marked_opacity


def expand_grey(canvas: bytearray, stride: int, grey: bytes | bytearray, width: int,
                height: int, mask: Any = None, strength: int = 0) -> None:
    """Same contract as `render.kernels._paper.expand_grey`: grey rows into the RGBX canvas,
    darkened on the mask's set chips when there is one."""
    if width < 0 or height < 0 or stride < width * PIXEL_BYTES or len(canvas) < stride * height \
            or len(grey) < width * height:
        raise ValueError("the grey rows do not fit the canvas")
    keep = None if mask is None else _keep(mask, strength, (width, height))
    target = Image.frombuffer("RGBX", (width, height), canvas, "raw", "RGBX", stride, 1)
    target.readonly = False  # draw on the buffer itself
    target.paste(Image.frombuffer("L", (width, height), grey, "raw", "L", 0, 1))
    if keep is not None:
        _scale(memoryview(canvas).cast("B"), stride, keep)


def darken(canvas: Any, stride: int, area: tuple[int, int], mask: Any, strength: int,
           source: Any = None) -> None:
    """Same contract as `render.kernels._paper.darken`: R, G, B on the mask's set chips multiplied
    by (255 - strength) / 255 with the C loop's rounding (numpy: Pillow has no such operation)."""
    view = _writable(canvas, stride, area)
    right, bottom = area
    if mask is None:
        raise TypeError("the mask must be a tuple (cells, chip, chips)")
    keep = _keep(mask, strength, area)
    rows = None if source is None else memoryview(source).cast("B")
    if rows is not None and rows.nbytes < stride * max(bottom - 1, 0) + right * PIXEL_BYTES:
        raise ValueError("the source rows do not fit the canvas")
    _scale(view, stride, keep, rows)


def _scale(view: memoryview, stride: int, keep: npt.NDArray[np.uint16],
           source: memoryview | None = None) -> None:
    """view's rows = source's (or its own) times keep / 255, rounded as the C loop rounds."""
    if keep.size == 0:
        return
    shape, strides = keep.shape, (stride, 1)
    into = np.lib.stride_tricks.as_strided(np.frombuffer(view, np.uint8), shape, strides)
    read = into if source is None else np.lib.stride_tricks.as_strided(
        np.frombuffer(source, np.uint8), shape, strides)
    value = read.astype(np.uint16) * keep + 128
    into[...] = (value + (value >> 8)) >> 8


def _keep(mask: Any, strength: int, area: tuple[int, int]) -> npt.NDArray[np.uint16]:
    """Per byte of the area (4 a pixel), what it is multiplied by: 255 - strength on R, G, B
    of set chips, 255 elsewhere and on every X byte."""
    if not 0 <= strength <= MAX_STRENGTH:
        raise ValueError(f"the strength must be 0-{MAX_STRENGTH}")
    switch = np.asarray(_switch(mask, area), dtype=bool)[:area[1], :area[0]]
    keep = np.where(switch, 255 - strength, 255).astype(np.uint16)
    per_byte = np.repeat(keep[:, :, None], PIXEL_BYTES, axis=2)
    per_byte[:, :, 3] = 255
    return per_byte.reshape(area[1], area[0] * PIXEL_BYTES)

"""A candidate for the blend without a compiler, measured by bench/blend.py and not taken.

The same arithmetic as `render/kernels/_blend.c` in numpy, bit-identical to it, X byte included: per
byte, `v = out * (255 - a) + colour * a + 128; out = (v + (v >> 8)) >> 8`. A page's blend is
about 2,500 small pieces, so numpy's per-call overhead dominates: it was slower than Pillow's
paste (docs/performance.md), and numpy is not otherwise a dependency of vaultd.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

PIXEL_BYTES = 4
Bytes = npt.NDArray[np.uint8]
Piece = tuple[int, int, int, int, Bytes, Bytes]


def paste(canvas: Any, stride: int, area: tuple[int, int], corners: Sequence[Any],
          pieces: Sequence[Any]) -> None:
    """Blend every piece at every corner into the RGBX `canvas`, clipped to `area`.

    Same contract as `render.kernels._blend.paste`: everything is checked before any pixel is
    touched.
    """
    view = memoryview(canvas)
    if view.readonly:
        raise TypeError("the canvas must be a writable buffer")
    right, bottom = area
    if right < 0 or bottom < 0 or stride < right * PIXEL_BYTES or view.nbytes < stride * bottom:
        raise ValueError("the area does not fit the canvas")
    checked_corners = [_corner(corner) for corner in corners]
    checked_pieces = [_piece(piece) for piece in pieces]
    rows = np.frombuffer(view.cast("B"), dtype=np.uint8, count=stride * bottom)
    rows = rows.reshape(bottom, stride)
    for left, top in checked_corners:
        for piece in checked_pieces:
            _blend_piece(rows, right, bottom, left, top, piece)


def _corner(corner: Any) -> tuple[int, int]:
    if not isinstance(corner, tuple):
        raise TypeError("a corner must be a tuple")
    if len(corner) != 2 or not all(isinstance(value, int) for value in corner):
        raise TypeError("a corner is (left, top)")
    return corner[0], corner[1]


def _piece(piece: Any) -> Piece:
    if not isinstance(piece, tuple):
        raise TypeError("a piece must be a tuple")
    if len(piece) != 6 or not all(isinstance(value, int) for value in piece[:4]):
        raise TypeError("a piece is (dx, dy, width, height, colour, alpha)")
    dx, dy, width, height, colour, alpha = piece
    size = width * height * PIXEL_BYTES
    if width < 0 or height < 0 or len(colour) != size or len(alpha) != size:
        raise ValueError("a piece's planes do not match its size")
    shape = (height, width * PIXEL_BYTES)
    return (dx, dy, width, height, np.frombuffer(colour, np.uint8).reshape(shape),
            np.frombuffer(alpha, np.uint8).reshape(shape))


def _blend_piece(rows: Bytes, right: int, bottom: int, left: int, top: int,
                 piece: Piece) -> None:
    dx, dy, width, height, colour, alpha = piece
    x, y = left + dx, top + dy
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + width, right), min(y + height, bottom)
    if x0 >= x1 or y0 >= y1:
        return
    out = rows[y0:y1, x0 * PIXEL_BYTES:x1 * PIXEL_BYTES]
    cut = (slice(y0 - y, y1 - y), slice((x0 - x) * PIXEL_BYTES, (x1 - x) * PIXEL_BYTES))
    a = alpha[cut].astype(np.uint16)
    # Every step fits in 16 bits, as in the C loop: 255 * 255 + 128 < 65536.
    v = out * (255 - a) + colour[cut] * a + 128
    out[...] = (v + (v >> 8)) >> 8

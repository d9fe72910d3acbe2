"""Which blend the watermark pattern uses: the C loop when it was built, else Pillow's paste.
The same for the invisible mark's pass over the paper (`darken`, `expand_grey`): C, or numpy.

`render/kernels/_blend.c` and `render/kernels/_paper.c` are optional extensions (setup.py): an
install without a C compiler still works, on Pillow's masked paste
(`render/kernels/blend_pillow.py`), which gives the same RGB bytes at about six times the cost
(docs/performance.md). `IMPLEMENTATION` names the one in use; vaultd logs it at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Paste(Protocol):
    """`render.kernels._blend.paste`'s signature (the mask is optional)."""

    def __call__(self, canvas: Any, stride: int, area: tuple[int, int], corners: Sequence[Any],
                 pieces: Sequence[Any], mask: Any = None, /) -> None: ...


class ExpandGrey(Protocol):
    """`render.kernels._blend.expand_grey`'s signature (the mark's mask and strength are
    optional)."""

    def __call__(self, canvas: bytearray, stride: int, grey: bytes | bytearray, width: int,
                 height: int, mask: Any = None, strength: int = 0, /) -> None: ...


class Darken(Protocol):
    """`render.kernels._blend.darken`'s signature (the source is optional)."""

    def __call__(self, canvas: Any, stride: int, area: tuple[int, int], mask: Any,
                 strength: int, source: Any = None, /) -> None: ...


def _choose() -> tuple[Paste, ExpandGrey, Darken, str]:
    try:
        from render.kernels import _blend, _paper
    except ImportError:  # installed without a compiler
        from render.kernels import blend_pillow

        return blend_pillow.paste, blend_pillow.expand_grey, blend_pillow.darken, "Pillow"
    return _blend.paste, _paper.expand_grey, _paper.darken, "C"


paste, expand_grey, darken, IMPLEMENTATION = _choose()

__all__ = ["IMPLEMENTATION", "darken", "expand_grey", "paste"]

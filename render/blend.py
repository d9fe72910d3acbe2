"""Which blend the watermark pattern uses: the C loop when it was built, else Pillow's paste.

`render/_blend.c` is an optional extension (setup.py): an install without a C compiler still
works, on Pillow's masked paste (`render/blend_pillow.py`), which gives the same RGB bytes at
about six times the cost (docs/performance.md). `IMPLEMENTATION` names the one in use; vaultd
logs it at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Paste(Protocol):
    """`render._blend.paste`'s signature (the mask is optional)."""

    def __call__(self, canvas: Any, stride: int, area: tuple[int, int], corners: Sequence[Any],
                 pieces: Sequence[Any], mask: Any = None, /) -> None: ...


ExpandGrey = Callable[[bytearray, int, bytes | bytearray, int, int], None]


def _choose() -> tuple[Paste, ExpandGrey, str]:
    try:
        from render import _blend
    except ImportError:  # installed without a compiler
        from render import blend_pillow

        return blend_pillow.paste, blend_pillow.expand_grey, "Pillow"
    return _blend.paste, _blend.expand_grey, "C"


paste, expand_grey, IMPLEMENTATION = _choose()

__all__ = ["IMPLEMENTATION", "expand_grey", "paste"]

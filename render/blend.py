"""Which blend the watermark pattern uses: the C loop when it was built, else Pillow's paste.

`render/_blend.c` is an optional extension (setup.py): an install without a C compiler still
works, on Pillow's masked paste (`render/blend_pillow.py`), which gives the same RGB bytes at
about six times the cost (docs/performance.md). `IMPLEMENTATION` names the one in use; vaultd
logs it at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Paste = Callable[[Any, int, tuple[int, int], Sequence[Any], Sequence[Any]], None]


def _choose() -> tuple[Paste, str]:
    try:
        from render import _blend
    except ImportError:  # installed without a compiler
        from render import blend_pillow

        return blend_pillow.paste, "Pillow"
    return _blend.paste, "C"


paste, IMPLEMENTATION = _choose()

__all__ = ["IMPLEMENTATION", "paste"]

"""Which blend the workers draw with, told without loading it: the server logs it at start-up
(`watermark blend: C`) but never imports `render.kernels`, whose extensions and numpy passes are
the drawing's (docs/architecture.md, "How it is built").

A worker's `render.kernels.blend` takes the C loop when both of its extensions were built
beside it (`setup.py` makes them optional), else Pillow's paste: finding the two extension
files where that import looks is the same test, short of loading them."""

from __future__ import annotations

from importlib.machinery import PathFinder
from pathlib import Path

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
EXTENSIONS = ("_blend", "_paper")


def blend_implementation(kernels: Path = KERNELS) -> str:
    """"C" when the workers' blend will be the C loop, else "Pillow"."""
    built = all(PathFinder.find_spec(name, [str(kernels)]) is not None for name in EXTENSIONS)
    return "C" if built else "Pillow"

# Stub of the C extension render/kernels/_blend.c (built by setup.py): mypy cannot read the .so.
from collections.abc import Sequence

def paste(
    canvas: bytearray,
    stride: int,
    area: tuple[int, int],
    corners: Sequence[tuple[int, int]],
    pieces: Sequence[tuple[int, int, int, int, bytes, bytes]
                     | tuple[int, int, int, int, bytes, bytes, bytes | None]],
    mask: tuple[bytes, int, int] | None = None,
    /,
) -> None: ...

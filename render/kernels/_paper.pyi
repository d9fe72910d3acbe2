# Stub of the C extension render/kernels/_paper.c (built by setup.py): mypy cannot read the .so.

def expand_grey(
    canvas: bytearray,
    stride: int,
    grey: bytes | bytearray,
    width: int,
    height: int,
    mask: tuple[bytes, int, int] | None = None,
    strength: int = 0,
    /,
) -> None: ...

def darken(
    canvas: bytearray,
    stride: int,
    area: tuple[int, int],
    mask: tuple[bytes, int, int],
    strength: int,
    source: bytes | bytearray | memoryview | None = None,
    /,
) -> None: ...

from collections.abc import Sequence
from typing import Any

def paste(canvas: Any, stride: int, area: tuple[int, int], corners: Sequence[Any],
          pieces: Sequence[Any], /) -> None: ...

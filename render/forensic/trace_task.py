"""The trace task: a leaked image (untrusted bytes) decoded in a render worker, never in the
server process, with the same guards as an upload (format by magic bytes, pixel cap, PNG
chunks verified, every Pillow error an Unreadable)."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import placement, placement_date, placement_page, placement_read
from render.forensic.decode import detect
from render.forensic.layout import keyed
from render.forensic.served import LONG_SIDE
from render.forensic_wire.evidence import Evidence
from render.forensic_wire.image_kinds import sniff
from render.wire.model import JPEG, PNG, Unreadable

# A leaked screenshot can be larger than any page we serve; 40 MP (a 4K display at 4x) is
# plenty, and bounds the decoder's memory well inside a worker's cap.
MAX_TRACE_PIXELS = 40_000_000
_FORMATS = {JPEG: "JPEG", PNG: "PNG"}
T = TypeVar("T")
Floats = npt.NDArray[np.float32]


def trace_image(data: bytes, layout_key: bytes | None = None, long_side: int = LONG_SIDE,
                ) -> int | None:
    """The value marked in the image `data` in the layout of `layout_key` (the deployment's
    layout subkey, `vaultd.services.pages.mark_key`; None: the published layout), or None;
    Unreadable for a damaged image. `long_side`: the deployment's `render.long_side`, the
    served pages' size the decoder assumes (`render.forensic.served`)."""
    found = _read(data, lambda image: detect(image, keyed(layout_key), long_side))
    return found.render_id if found is not None else None


def read_placement(data: bytes, long_side: int = LONG_SIDE) -> bytes | None:
    """The placement mark's offsets measured on the image `data`, per cell
    (`render.forensic_wire.evidence.Evidence`, as bytes), or None when it shows no pattern;
    Unreadable for a damaged image. `long_side`: as for `trace_image`."""
    evidence = _read(data, lambda image: placement_read.read(image, long_side))
    return None if evidence is None else evidence.to_bytes()


def read_leak(data: bytes, long_side: int, print_key: bytes, dates: Sequence[str] = (),
              drawn: Callable[[tuple[str, ...], int], Floats] | None = None) -> bytes | None:
    """`read_placement`'s evidence, then a little-endian float32 score for each of `dates`
    as the day the pattern prints (`placement_date`; NaN for every date when none shows),
    then the page's print when it has one (`placement_page`, under the deployment's
    `print_key`), or None: what a placement trace names a view by and narrows its candidates
    by, from one decode of the image (a worker answers in bytes;
    `vaultd.services.tracing.placement.read_evidence` splits them)."""
    def all_three(image: Image.Image) -> bytes | None:
        found = placement_read.read_with_model(image, long_side)
        if found is None:
            return None
        evidence, model, scale = found
        days = b""
        if dates:
            scores = None if drawn is None else placement_date.day_scores(
                model, scale, drawn(tuple(dates), round(image.width / scale)))
            days = (np.full(len(dates), np.nan) if scores is None else scores
                    ).astype("<f4").tobytes()
        return (evidence.to_bytes() + days
                + (placement_page.page_print(image, print_key) or b""))
    return _read(data, all_three)


def page_print(data: bytes, print_key: bytes) -> bytes | None:
    """The print of a page as served (`data`, its JPEG), under the deployment's `print_key`."""
    return _read(data, lambda image: placement_page.page_print(image, print_key))


def score_placement(evidence: bytes, seeds: list[bytes]) -> bytes:
    """Each seed's standing against the evidence where it could name a view
    (`render.forensic.placement.screened`), as little-endian float64s, one per seed."""
    found = placement.screened(Evidence.from_bytes(evidence), seeds)
    return found.astype("<f8").tobytes()


def _read(data: bytes, reading: Callable[[Image.Image], T]) -> T:
    """`reading` of the image `data`, opened with the guards above."""
    kind = sniff(data)
    if kind is None:
        raise Unreadable("the image is neither a JPEG nor a PNG")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            if kind == PNG:
                with Image.open(io.BytesIO(data), formats=["PNG"]) as probe:
                    _check_size(probe.size)
                    probe.verify()
            with Image.open(io.BytesIO(data), formats=[_FORMATS[kind]]) as image:
                _check_size(image.size)
                image.load()
                return reading(image)
    except Unreadable:
        raise
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError,
            Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Unreadable("the image is damaged") from None


def _check_size(size: tuple[int, int]) -> None:
    if size[0] * size[1] > MAX_TRACE_PIXELS:
        raise Unreadable("the image has more than 40 million pixels")

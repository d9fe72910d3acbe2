"""A page's print (`render.forensic.placement_page`): the bits a worker makes of a page as
served and of a leak, and what the server does with them: parse them by fixed rules (a
worker's answer is untrusted), cut them into the bands the database indexes, and count the
bits two prints differ in.

The bits are signs of BITS projections of a GRID x GRID grid, each projection's weights +-1
from SHAKE-128 of the deployment's print key (`vaultd.services.pages.mark_key`): a standard
function, so the same projections whatever library versions a deployment later runs, and
keyed, so the stored bits say nothing of a page to whoever reads the database without the key.

A page's bits stored, a leak's looked up: prints that agree in at least one band of
BAND_BITS bits are read back (a random-hyperplane hash: two prints at an angle t agree in a
bit with chance 1 - t/pi), and a page is the leak's when the two differ in at most
SAME_PAGE bits.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import numpy.typing as npt

GRID = 16  # cells across and down the page (its whole width and height)
BITS = 256
BAND_BITS = 16
BANDS = BITS // BAND_BITS
PRINT_BYTES = BITS // 8
# Measured on 24 pages of the bench corpus, each leaked as another viewer was served it, washed
# (as served, scaled to 0.6 at JPEG q60, or cut above the strip and halved): a page and its
# leak differ in 0-20 bits, the closest other page (two title pages of one series) in 31, most
# in 50-90. A wrong page let in costs its views' scoring, no more.
SAME_PAGE = 24
_VERSION = b"vaultd page print v1"


class BadPrint(ValueError):
    """A worker's print that is not what `page_print` writes."""


def parsed(raw: object) -> bytes | None:
    """A worker's print, or None when it made none; BadPrint when it is not a print."""
    if raw is None:
        return None
    if not isinstance(raw, bytes) or len(raw) != PRINT_BYTES:
        raise BadPrint(f"a page print is {PRINT_BYTES} bytes")
    return raw


def bands(page_print: bytes) -> list[str]:
    """The print's BANDS bands, each named by its place and its bits ("3:9f2c"): two prints
    that share one are looked at."""
    step = BAND_BITS // 8
    return [f"{i}:{page_print[i * step: (i + 1) * step].hex()}" for i in range(BANDS)]


def distance(first: bytes, second: bytes) -> int:
    """The bits two prints differ in."""
    return (int.from_bytes(first, "big") ^ int.from_bytes(second, "big")).bit_count()


@functools.lru_cache(maxsize=4)
def projections(key: bytes) -> npt.NDArray[np.float64]:
    """The BITS x GRID^2 projection weights, each +1 or -1, from SHAKE-128 of the key."""
    stream = hashlib.shake_128(_VERSION + key).digest(BITS * GRID * GRID // 8)
    bits = np.unpackbits(np.frombuffer(stream, dtype=np.uint8))
    weights: npt.NDArray[np.float64] = bits.astype(np.float64).reshape(BITS, GRID * GRID) * 2 - 1
    return weights

"""Where the mark's bits sit in its tile, and how a render id becomes those bits.

The tile is TILE_CHIPS x TILE_CHIPS chips of CHIP x CHIP pixels, repeated over the whole page.
A fixed pseudo-random share of the chips is the synchronisation template (known to the decoder,
it finds the tile's offset); the rest carry the payload: the 45-bit id and a CRC-16 over it,
each bit repeated on REPEAT chips scattered over the tile. Every chip is also flipped by a fixed
key bit, so that the tile looks like noise whatever the id. A chip is either darkened or not
(`render.forensic.embed`): paper white has no room above it.
"""

from __future__ import annotations

import binascii
import functools

import numpy as np

# Imported now, not on first use (numpy loads it lazily): a worker switches to a uid of its own
# after its imports, and that uid may not be able to read the installation (a 0700 home).
import numpy.random
import numpy.typing as npt

# Imported here, not on first use: a sandboxed render worker cannot load modules any more, and
# the plan below is first computed inside one (numpy loads `random` lazily).
from numpy import random as numpy_random

from render.forensic.codes import ID_BITS

CHIP = 8  # pixels a side: still 4 after a 50 % downscale, and JPEG q50 keeps them
TILE_CHIPS = 24
TILE = CHIP * TILE_CHIPS  # 192 px: about 55 tiles on a served letter page
CRC_BITS = 16
PAYLOAD_BITS = ID_BITS + CRC_BITS
REPEAT = 7
_CHIPS = TILE_CHIPS * TILE_CHIPS
_SEED = 0x7661756C7464  # fixed: a published layout, see the limits in docs/leak-tracing.md

Bits = npt.NDArray[np.uint8]


@functools.cache
def _plan() -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], Bits]:
    """(payload chip -> bit index, sync chip indices, key bit per chip), from the fixed seed."""
    rng = numpy_random.default_rng(_SEED)
    order = rng.permutation(_CHIPS)
    payload_chips = order[: PAYLOAD_BITS * REPEAT]
    bit_of_chip = np.full(_CHIPS, -1, dtype=np.intp)
    bit_of_chip[payload_chips] = np.arange(PAYLOAD_BITS * REPEAT) % PAYLOAD_BITS
    sync_chips = np.sort(order[PAYLOAD_BITS * REPEAT:])
    key = rng.integers(0, 2, _CHIPS, dtype=np.uint8)
    return bit_of_chip, sync_chips, key


def bit_of_chip() -> npt.NDArray[np.intp]:
    """For each chip (row-major), the payload bit it carries, or -1 for a sync chip."""
    return _plan()[0]


def sync_chips() -> npt.NDArray[np.intp]:
    return _plan()[1]


def key_bits() -> Bits:
    return _plan()[2]


def crc(render_id: int) -> int:
    return binascii.crc_hqx(render_id.to_bytes(6, "big"), 0x5A5A)


def payload(render_id: int) -> Bits:
    """The id's bits then its CRC's bits, most significant first."""
    word = render_id << CRC_BITS | crc(render_id)
    return np.array([(word >> (PAYLOAD_BITS - 1 - i)) & 1 for i in range(PAYLOAD_BITS)],
                    dtype=np.uint8)


def unpack(bits: Bits) -> int | None:
    """The render id `bits` carry if their CRC matches, else None."""
    word = 0
    for bit in bits.tolist():
        word = word << 1 | int(bit)
    render_id = word >> CRC_BITS
    if render_id == 0 or crc(render_id) != word & ((1 << CRC_BITS) - 1):
        return None
    return render_id


def chip_bits(render_id: int) -> Bits:
    """Which chips are darkened (1) for `render_id`, row-major: key XOR (sync 0 | payload)."""
    bits, key = payload(render_id), key_bits()
    carried = np.zeros(_CHIPS, dtype=np.uint8)
    owner = bit_of_chip()
    mask = owner >= 0
    carried[mask] = bits[owner[mask]]
    return key ^ carried

"""Where the mark's bits sit in its tile, and how a render id becomes those bits.

The tile is TILE_CHIPS x TILE_CHIPS chips of CHIP x CHIP pixels, repeated over the whole page.
A pseudo-random share of the chips is the synchronisation template (known to the decoder,
it finds the tile's offset); the rest carry the payload: the 45-bit id and a CRC-16 over it,
each bit repeated on REPEAT chips scattered over the tile. Every chip is also flipped by a
key bit, so that the tile looks like noise whatever the id. A chip is either darkened or not
(`render.forensic.embed`): paper white has no room above it.

Which chips are sync, which bit each other chip carries and the key bits (the `Layout`) derive
from a per-deployment layout key (`keyed`; vaultd derives it from the mark key,
`vaultd.services.pages.mark_key`), so a reader of the source does not know where the template or a
given bit lies. `keyed(None)` is the layout of the published seed (tests and tools that embed
and decode without a deployment). The stream they are drawn from is written out in
`render.forensic.layout_stream`, so that it stays the same whatever NumPy runs later.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from render.forensic.layout_stream import Pcg64
from render.forensic_wire.trace_codes import ID_BITS

CHIP = 8  # pixels a side: still 4 after a 50 % downscale, and JPEG q50 keeps them
TILE_CHIPS = 24
TILE = CHIP * TILE_CHIPS  # 192 px: about 55 tiles on a served letter page
CRC_BITS = 16
PAYLOAD_BITS = ID_BITS + CRC_BITS
REPEAT = 7
_CHIPS = TILE_CHIPS * TILE_CHIPS
_PUBLIC_SEED = 0x7661756C7464  # the layout without a deployment key (tests, tools)
_KEY_CONTEXT = b"vaultd mark layout v1"

Bits = npt.NDArray[np.uint8]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: `keyed` caches them
class Layout:
    """Where the mark's bits sit in the tile, for one deployment."""

    bit_of_chip: npt.NDArray[np.intp]  # per chip (row-major): the payload bit it carries, or -1
    sync_chips: npt.NDArray[np.intp]  # the sync template's chips, sorted
    key_bits: Bits  # per chip: flipped (1) or not

    def chip_bits(self, render_id: int) -> Bits:
        """Which chips are darkened (1) for `render_id`, row-major: key XOR (sync 0 | payload)."""
        bits = payload(render_id)
        carried = np.zeros(_CHIPS, dtype=np.uint8)
        mask = self.bit_of_chip >= 0
        carried[mask] = bits[self.bit_of_chip[mask]]
        return self.key_bits ^ carried


@functools.lru_cache(maxsize=8)
def keyed(layout_key: bytes | None) -> Layout:
    """The layout of a deployment's `layout_key` (None: the published one), made once per
    process: the decoder reads it for every fold it tries."""
    if layout_key is None:
        seed = _PUBLIC_SEED
    else:
        seed = int.from_bytes(hashlib.sha256(_KEY_CONTEXT + layout_key).digest(), "big")
    # NumPy's default_rng(seed) stream, written out (layout_stream): marked pages must trace
    # after any NumPy upgrade.
    rng = Pcg64(seed)
    order = np.array(rng.permutation(_CHIPS), dtype=np.intp)
    payload_chips = order[: PAYLOAD_BITS * REPEAT]
    bit_of_chip = np.full(_CHIPS, -1, dtype=np.intp)
    bit_of_chip[payload_chips] = np.arange(PAYLOAD_BITS * REPEAT) % PAYLOAD_BITS
    sync_chips = np.sort(order[PAYLOAD_BITS * REPEAT:])
    key = np.array(rng.bits(_CHIPS), dtype=np.uint8)
    for array in (bit_of_chip, sync_chips, key):
        array.setflags(write=False)  # shared by every caller in the process
    return Layout(bit_of_chip, sync_chips, key)


PUBLIC = keyed(None)


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

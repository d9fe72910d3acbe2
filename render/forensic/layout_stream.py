"""The keyed layout's random stream, written out so that no library upgrade can move it.

Every page marked so far carries the layout `render.forensic.layout.keyed` drew from NumPy's
`default_rng(seed)`: SeedSequence to seed a PCG64 generator, then a Fisher-Yates permutation of
the chips and one key bit per chip. NumPy does not promise that stream across versions, and a
change would silently stop every page marked before it from tracing. So the three published
algorithms are spelled out here, in integers, and the layout reads them, not NumPy:

- SeedSequence's entropy pool (O'Neill's `seed_seq_fe`, NumPy's `bit_generator.SeedSequence`,
  pool of four 32-bit words) and its `generate_state`;
- PCG64 (PCG XSL RR 128/64, with NumPy's seeding and its split of a 64-bit draw into two
  32-bit ones, low half first);
- NumPy's `Generator.shuffle` (masked rejection, `random_interval`) and `integers(0, 2,
  dtype=uint8)` (Lemire's method on the bytes of 32-bit draws, low byte first).

`tests/test_forensic_layout_stream.py` checks them against NumPy on many seeds (so a NumPy that
still agrees proves the transcription) and pins the layouts' digests (so a change here fails).
"""

from __future__ import annotations

from collections.abc import Iterator

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1

# SeedSequence's constants (Melissa O'Neill's seed_seq_fe, as NumPy uses them).
_POOL_WORDS = 4
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16

_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645


class _HashConst:
    """The running multiplier `hashmix` advances (a C `uint32_t *` in the original)."""

    def __init__(self) -> None:
        self.value = _INIT_A

    def hashmix(self, word: int) -> int:
        word ^= self.value
        self.value = (self.value * _MULT_A) & _MASK32
        word = (word * self.value) & _MASK32
        return word ^ (word >> _XSHIFT)


def _mix(x: int, y: int) -> int:
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _MASK32
    return result ^ (result >> _XSHIFT)


def _entropy_words(seed: int) -> list[int]:
    """A non-negative integer as 32-bit words, least significant first (at least one)."""
    words = []
    while True:
        words.append(seed & _MASK32)
        seed >>= 32
        if not seed:
            return words


def seed_state(seed: int) -> list[int]:
    """SeedSequence(seed).generate_state(4, uint64): four 64-bit words."""
    entropy = _entropy_words(seed)
    hash_const = _HashConst()
    pool = [hash_const.hashmix(entropy[i] if i < len(entropy) else 0)
            for i in range(_POOL_WORDS)]
    for src in range(_POOL_WORDS):
        for dst in range(_POOL_WORDS):
            if src != dst:
                pool[dst] = _mix(pool[dst], hash_const.hashmix(pool[src]))
    for src in range(_POOL_WORDS, len(entropy)):
        for dst in range(_POOL_WORDS):
            pool[dst] = _mix(pool[dst], hash_const.hashmix(entropy[src]))
    out32 = []
    multiplier = _INIT_B
    for i in range(2 * 4):
        word = pool[i % _POOL_WORDS] ^ multiplier
        multiplier = (multiplier * _MULT_B) & _MASK32
        word = (word * multiplier) & _MASK32
        out32.append(word ^ (word >> _XSHIFT))
    return [out32[2 * i] | out32[2 * i + 1] << 32 for i in range(4)]


class Pcg64:
    """NumPy's PCG64 bit generator, seeded as `default_rng(seed)` seeds it."""

    def __init__(self, seed: int) -> None:
        words = seed_state(seed)
        initstate = words[0] << 64 | words[1]
        initseq = words[2] << 64 | words[3]
        self._inc = (initseq << 1 | 1) & _MASK128
        self._state = 0
        self._step()
        self._state = (self._state + initstate) & _MASK128
        self._step()
        self._half: int | None = None  # the high half of the last 64-bit draw, not yet used

    def _step(self) -> None:
        self._state = (self._state * _PCG_MULTIPLIER + self._inc) & _MASK128

    def next64(self) -> int:
        self._step()
        high, low = self._state >> 64, self._state & _MASK64
        rotation = high >> 58
        value = high ^ low
        return ((value >> rotation) | (value << (64 - rotation))) & _MASK64

    def next32(self) -> int:
        if self._half is not None:
            value, self._half = self._half, None
            return value
        draw = self.next64()
        self._half = draw >> 32
        return draw & _MASK32

    def bounded(self, largest: int) -> int:
        """A uniform integer in [0, largest] by masked rejection (NumPy's random_interval; its
        64-bit branch, for a `largest` past 2**32, is never reached by a layout)."""
        if not 0 <= largest <= _MASK32:
            raise ValueError("bounded draws are transcribed up to 2**32 - 1")
        if largest == 0:
            return 0
        mask = largest
        for shift in (1, 2, 4, 8, 16):
            mask |= mask >> shift
        while True:
            value = self.next32() & mask
            if value <= largest:
                return value

    def permutation(self, n: int) -> list[int]:
        """`Generator.permutation(n)`: Fisher-Yates from the end, over range(n)."""
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.bounded(i)
            order[i], order[j] = order[j], order[i]
        return order

    def bits(self, n: int) -> list[int]:
        """`Generator.integers(0, 2, n, dtype=uint8)`: Lemire's method on bytes, whose result
        for a range of two is a byte's top bit."""
        return [byte >> 7 for byte in self._bytes(n)]

    def _bytes(self, n: int) -> Iterator[int]:
        for i in range(n):
            if i % 4 == 0:
                word = self.next32()
            yield (word >> (8 * (i % 4))) & 0xFF

"""Every keyed field a page is marked with, pinned: a page marked today must trace after any
library upgrade (docs/leak-tracing.md, "Stable derivations").

The digests below were computed once from the code as it marks pages; a change to any
derivation (the layout's stream, the placement field, the mark key's subkeys, FF3-1's seal)
fails here before it can silently stop old pages from tracing. The layout's stream is also
checked against NumPy's own `default_rng`, from which it was transcribed: while the installed
NumPy agrees, that proves the transcription; were NumPy ever to change its stream, that test
would fail and the pinned digests would still hold vaultd to the stream its pages carry.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from render.forensic.layout import Layout, keyed
from render.forensic.layout_stream import Pcg64, seed_state
from render.forensic.placement import field
from vaultd.services.pages.mark_key import MarkCipher

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

KEY = bytes(range(32))
SEALED = 3975971203495


def _digest(layout: Layout) -> str:
    return hashlib.sha256(layout.bit_of_chip.astype("<i8").tobytes()
                          + layout.sync_chips.astype("<i8").tobytes()
                          + layout.key_bits.tobytes()).hexdigest()


@pytest.mark.parametrize(("layout_key", "expected"), [
    (None, "ea9fadceae7e6b12f9dcdf874ae5eba26650c6bf5b65117915597af9c60c74f7"),
    (bytes(32), "4a3b7d5a012e9fc3af42e1407ba94eb98313263dfa3d2838967dcd7893b5e126"),
    (KEY, "c6974e35d519cebd6759cd5e63e7b525753f51ed626914c980352f6b2328c939"),
])
def test_the_layouts_are_pinned(layout_key: bytes | None, expected: str) -> None:
    assert _digest(keyed(layout_key)) == expected


def test_the_placement_field_is_pinned() -> None:
    drawn = field(bytes(range(16)))
    assert hashlib.sha256(drawn.astype("<i1").tobytes()).hexdigest() == (
        "dd5e0c5e5f2c96d37a16f632be8c271fb78844bbf8b28941b9bc5d0fb8876541")


def test_the_mark_keys_derivations_are_pinned() -> None:
    cipher = MarkCipher.from_key(KEY)
    assert cipher.layout_key.hex() == (
        "47385f50069b7c77d7e75d0ba26f698ee3daf5bf667d623f16a453d7d14051c6")
    assert cipher.placement_seed(0x1234_5678_9ABC).hex() == "f9f4b69c48b4d894524319d73a9e75ea"
    assert cipher.seal(0x1234_5678_9ABC) == SEALED
    assert cipher.open(SEALED) == 0x1234_5678_9ABC


def test_the_layout_stream_is_numpys_default_rng() -> None:
    seeds = [0, 1, 0x7661756C7464, 2**64 + 5, 2**256 - 1]
    chooser = random.Random(20261128)
    seeds += [chooser.getrandbits(256) for _ in range(60)]
    for seed in seeds:
        reference = np.random.default_rng(seed)
        ours = Pcg64(seed)
        assert seed_state(seed) == [int(word) for word in
                                    np.random.SeedSequence(seed).generate_state(4, np.uint64)]
        assert ours.permutation(576) == reference.permutation(576).tolist(), seed
        assert ours.bits(576) == reference.integers(0, 2, 576, dtype=np.uint8).tolist(), seed

"""The mark's keyed layout (docs/leak-tracing.md, "A keyed mark"): where the sync template and
each bit's chips sit derives from the deployment's layout subkey, so a mark is read in its own
deployment's layout only, and the subkey a worker gets does not give the mark key."""

from __future__ import annotations

import random

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_attacks import ATTACKS
from render.forensic import decode, layout
from render.forensic.layout import PUBLIC, keyed
from tests.forensic_pages import marked_cover, text_cover
from vaultd.services.pages.mark_key import MarkCipher

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

VALUE = 0x0BA9_8765_4321
KEY_A, KEY_B = bytes(range(32)), bytes(range(1, 33))


def _served(layout_key: bytes | None) -> Image.Image:
    return marked_cover(VALUE, layout_key)


def test_each_key_lays_the_tile_out_differently_and_once_per_process() -> None:
    a, b = keyed(KEY_A), keyed(KEY_B)
    assert keyed(KEY_A) is a  # made once: the decoder reads it for every fold it tries
    for one, other in ((a, b), (a, PUBLIC), (b, PUBLIC)):
        assert not np.array_equal(one.sync_chips, other.sync_chips)
        assert not np.array_equal(one.bit_of_chip, other.bit_of_chip)
        assert not np.array_equal(one.key_bits, other.key_bits)
    # The same shape of layout: as many sync chips, every payload bit on REPEAT chips.
    assert len(a.sync_chips) == len(PUBLIC.sync_chips)
    counts = np.bincount(a.bit_of_chip[a.bit_of_chip >= 0], minlength=layout.PAYLOAD_BITS)
    assert set(counts.tolist()) == {layout.REPEAT}


def test_a_page_is_read_in_its_own_layout_only() -> None:
    served = _served(KEY_A)
    assert decode(served, keyed(KEY_A)) == VALUE
    assert decode(served, keyed(KEY_B)) is None  # another deployment's key
    assert decode(served) is None  # the published layout, from the source alone


def test_a_keyed_mark_survives_a_leak_as_the_published_one_did() -> None:
    leaked = ATTACKS["downscale 50% + jpeg q50"](_served(KEY_A), text_cover().page_height,
                                                  random.Random(5))
    assert decode(leaked, keyed(KEY_A)) == VALUE


def test_the_layout_subkey_is_derived_one_way_and_never_shown() -> None:
    key = bytes(range(100, 132))
    cipher = MarkCipher.from_key(key)
    assert cipher.layout_key == MarkCipher.from_key(key).layout_key  # the same every process
    assert len(cipher.layout_key) == 32 and cipher.layout_key != key
    assert MarkCipher.from_key(bytes(32)).layout_key != cipher.layout_key
    assert key.hex() not in repr(cipher) and cipher.layout_key.hex() not in repr(cipher)
    assert cipher.open(cipher.seal(12345)) == 12345

"""A folded tile read as chips: aligned on the sync template, scored, turned into bit votes
(shared by every reading in `render.forensic.decode` and `render.forensic.photo`)."""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.fft  # loaded now: numpy loads it lazily, and a confined worker may not read it later
import numpy.typing as npt

from render.forensic import layout
from render.forensic.layout import CHIP, TILE_CHIPS

Floats = npt.NDArray[np.float32]


@functools.cache
def _template_spectrum() -> npt.NDArray[np.complex128]:
    """The conjugate spectrum of the sync template (the same for every fold)."""
    spectrum: npt.NDArray[np.complex128] = np.conj(np.fft.rfft2(_template()))
    return spectrum


def _template() -> Floats:
    """+1 where a sync chip is darkened, -1 where it is not, 0 on payload chips."""
    signs = np.zeros(TILE_CHIPS * TILE_CHIPS, dtype=np.float32)
    sync_chips = layout.sync_chips()
    signs[sync_chips] = 2.0 * layout.key_bits()[sync_chips] - 1.0
    return np.kron(signs.reshape(TILE_CHIPS, TILE_CHIPS), np.ones((CHIP, CHIP), np.float32))


def _tile_offset(folded: Floats) -> tuple[int, int]:
    """Where the tile starts in `folded` (rows, columns): the peak of its cyclic
    cross-correlation with the sync template."""
    corr = np.fft.irfft2(np.fft.rfft2(-folded) * _template_spectrum(), s=folded.shape)
    dy, dx = np.unravel_index(int(np.argmax(corr)), corr.shape)
    return int(dy), int(dx)


def aligned(folded: Floats) -> Floats:
    """Per chip, its mean darkening (positive = darkened), with the tile's offset found by
    cyclic cross-correlation with the sync template."""
    darkness = -folded
    dy, dx = _tile_offset(folded)
    aligned = np.roll(darkness, (-dy, -dx), axis=(0, 1))
    inner = aligned.reshape(TILE_CHIPS, CHIP, TILE_CHIPS, CHIP)[:, 1:-1, :, 1:-1]
    chips = inner.mean(axis=(1, 3)).reshape(-1)
    normalised: Floats = ((chips - chips.mean()) / max(float(chips.std()), 1e-9)).astype(
        np.float32)
    return normalised


def sync_score(chips: Floats) -> float:
    """Agreement of the sync chips with the template, in standard deviations under chance."""
    index = layout.sync_chips()
    signs = 2.0 * layout.key_bits()[index] - 1.0
    return float(np.dot(chips[index], signs) / math.sqrt(len(index)))


def votes(chips: Floats) -> npt.NDArray[np.float64]:
    """Soft-combine each bit's chips: a chip darkened where its key bit is 0 says 1; a
    positive vote means 1, its size how sure."""
    owner = layout.bit_of_chip()
    carriers = owner >= 0
    expected_if_zero = 2.0 * layout.key_bits()[carriers] - 1.0
    votes = np.zeros(layout.PAYLOAD_BITS, dtype=np.float64)
    np.add.at(votes, owner[carriers], -chips[carriers] * expected_if_zero)
    return votes

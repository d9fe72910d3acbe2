"""A folded tile read as chips: aligned on the sync template, scored, turned into bit votes
(shared by every reading in `render.forensic.decode` and `render.forensic.photo`), for one
deployment's layout (`render.forensic.layout.Layout`)."""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from render.forensic import fft
from render.forensic.layout import CHIP, PAYLOAD_BITS, TILE_CHIPS, Layout

Floats = npt.NDArray[np.float32]


@functools.lru_cache(maxsize=8)
def _template_spectrum(plan: Layout) -> fft.Spectrum:
    """The conjugate spectrum of the sync template (the same for every fold)."""
    spectrum: fft.Spectrum = np.conj(fft.rfft2(_template(plan)))
    return spectrum


def _template(plan: Layout) -> Floats:
    """+1 where a sync chip is darkened, -1 where it is not, 0 on payload chips."""
    signs = np.zeros(TILE_CHIPS * TILE_CHIPS, dtype=np.float32)
    signs[plan.sync_chips] = 2.0 * plan.key_bits[plan.sync_chips] - 1.0
    return np.kron(signs.reshape(TILE_CHIPS, TILE_CHIPS), np.ones((CHIP, CHIP), np.float32))


def _tile_offset(folded: Floats, plan: Layout) -> tuple[int, int]:
    """Where the tile starts in `folded` (rows, columns): the peak of its cyclic
    cross-correlation with the sync template."""
    corr = fft.irfft2(fft.rfft2(-folded) * _template_spectrum(plan), folded.shape)
    dy, dx = np.unravel_index(int(np.argmax(corr)), corr.shape)
    return int(dy), int(dx)


def aligned(folded: Floats, plan: Layout) -> Floats:
    """Per chip, its mean darkening (positive = darkened), with the tile's offset found by
    cyclic cross-correlation with the sync template."""
    darkness = -folded
    dy, dx = _tile_offset(folded, plan)
    aligned = np.roll(darkness, (-dy, -dx), axis=(0, 1))
    inner = aligned.reshape(TILE_CHIPS, CHIP, TILE_CHIPS, CHIP)[:, 1:-1, :, 1:-1]
    chips = inner.mean(axis=(1, 3)).reshape(-1)
    normalised: Floats = ((chips - chips.mean()) / max(float(chips.std()), 1e-9)).astype(
        np.float32)
    return normalised


def sync_score(chips: Floats, plan: Layout) -> float:
    """Agreement of the sync chips with the template, in standard deviations under chance."""
    index = plan.sync_chips
    signs = 2.0 * plan.key_bits[index] - 1.0
    return float(np.dot(chips[index], signs) / math.sqrt(len(index)))


def votes(chips: Floats, plan: Layout) -> npt.NDArray[np.float64]:
    """Soft-combine each bit's chips: a chip darkened where its key bit is 0 says 1; a
    positive vote means 1, its size how sure."""
    owner = plan.bit_of_chip
    carriers = owner >= 0
    expected_if_zero = 2.0 * plan.key_bits[carriers] - 1.0
    votes = np.zeros(PAYLOAD_BITS, dtype=np.float64)
    np.add.at(votes, owner[carriers], -chips[carriers] * expected_if_zero)
    return votes

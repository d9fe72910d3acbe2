"""The text's seed's own neighbourhood is read in a photo framed on the page
(docs/leak-tracing.md, "Small leaks"): when the two best coarse trials along the pattern's
line both lie far from where the text's lines put the vanishing line, the best trial near that
seed is refined and read instead of the second of them (`perspective._worth_refining`): a
chance lattice far along the line can outscore the tile's own there."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from render.forensic import perspective

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

_IMAGE = Image.new("L", (8, 8), 200)


def _trial(horizon: tuple[float, float], height: float) -> perspective.Flattened:
    lattice = perspective.TileLattice((80.0, 0.0), (0.0, 80.0), height)
    return perspective.Flattened(horizon, _IMAGE, np.eye(3), lattice)


def test_the_best_trial_near_the_seed_is_refined_when_neither_best_is_near() -> None:
    coarse = [_trial((0.0, -0.12), 0.05), _trial((0.04, 0.0), 0.04),
              _trial((0.07, 0.07), 0.03), _trial((0.09, 0.08), 0.025)]
    chosen = perspective._worth_refining(coarse, np.array([0.072, 0.066]))
    # The second best gives its place up: a photo that reads nothing refines and reads as
    # many trials as before.
    assert [trial.horizon for trial in chosen] == [(0.0, -0.12), (0.07, 0.07)]


def test_nothing_is_added_when_a_best_trial_is_near_the_seed_or_none_is() -> None:
    coarse = [_trial((0.0, -0.12), 0.05), _trial((0.07, 0.05), 0.04),
              _trial((0.07, 0.07), 0.03)]
    seed = np.array([0.072, 0.066])
    assert perspective._worth_refining(coarse, seed) == coarse[:2]
    assert perspective._worth_refining(coarse, None) == coarse[:2]
    far = [_trial((0.0, -0.12), 0.05), _trial((0.04, 0.0), 0.04), _trial((0.3, 0.3), 0.03)]
    assert perspective._worth_refining(far, seed) == far[:2]

"""A small photo framed on the page (docs/leak-tracing.md, "Small leaks"): read at its own
size, its noise can hide the tile's peak at the right vanishing line, so the lattice its
smaller, box-averaged copy shows there is tried too, unless it is the trial's own or a
harmonic of it (`perspective._as_coarse_sees`). The text cover, marked, projected by a known
pinhole camera (`bench.leakmark_untuned.Camera`) into a 450 x 600 frame with sensor noise:
at its own size the best coarse trial far from the text's seed shows noise's lattice, a
third of the tile's; the best trial near the seed, read in the second best's place
(`perspective._worth_refining`), shows the tile's."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from PIL import Image

from bench.leakmark import mark_page
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from bench.leakmark_untuned import Camera
from render.forensic import framed, perspective
from render.forensic.layout import TILE
from tests.forensic_pages import text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

RENDER_ID = 0x1D4E_6A8C_0F3
FRAME = (450, 600)
_NOISE_HORIZON = (0.24306510554124977, 0.2833366383609133)


@functools.cache
def _photo() -> tuple[Image.Image, float]:
    """The page tilted by 12 and -9 degrees, turned by 6, filling the frame (no edge), with
    read noise of 3 levels (a phone's photo saved small); and the length of the tile's
    horizontal vector at the frame's centre (px)."""
    served = jpeg(mark_page(text_cover(), RENDER_ID), SERVED_QUALITY)
    focal = 0.9 * math.hypot(*FRAME)
    camera = Camera(FRAME, focal, math.radians(12), math.radians(-9), math.radians(6),
                    (served.width * 0.5, served.height * 0.45),
                    focal * served.width / (1.4 * FRAME[0]))
    inverse = np.linalg.inv(camera.homography())
    inverse /= inverse[2, 2]
    photo = served.convert("L").transform(
        FRAME, Image.Transform.PERSPECTIVE, tuple(float(v) for v in inverse.ravel()[:8]),
        Image.Resampling.BICUBIC)
    noise = np.random.default_rng(5).normal(0, 3, (FRAME[1], FRAME[0]))
    noisy = Image.fromarray(np.clip(np.asarray(photo) + noise, 0, 255).astype(np.uint8))
    centre = inverse @ np.array([FRAME[0] / 2, FRAME[1] / 2, 1.0])
    ends = [camera.project(np.array([centre[:2] / centre[2] + [side * TILE / 2, 0.0]]))[0]
            for side in (-1, 1)]
    return noisy, float(np.hypot(*(ends[1] - ends[0])))


@functools.cache
def _found() -> perspective.Horizons:
    """`horizons` of the photo as a reduced photo's are read (no extra trials)."""
    found = perspective.horizons(_photo()[0])
    assert found is not None
    return found


@functools.cache
def _noise_trial() -> perspective.Flattened:
    """The photo flattened at the vanishing line of the best coarse trial far from the text's
    seed (0.1 from it), where its noise shows a lattice, not the tile's."""
    return perspective.flattened(_photo()[0], _NOISE_HORIZON)


def _smaller(photo: Image.Image) -> Image.Image:
    """The coarse copy `perspective.horizons` makes."""
    return photo.resize((round(photo.width * 2 / 3), round(photo.height * 2 / 3)),
                        Image.Resampling.BOX)


def _length(lattice: perspective.TileLattice | None) -> float:
    assert lattice is not None
    return math.hypot(*lattice.across)


def _times(trial: perspective.Flattened, factor: float) -> perspective.Flattened:
    assert trial.lattice is not None
    across, down = trial.lattice.across, trial.lattice.down
    return trial._replace(lattice=perspective.TileLattice(
        (factor * across[0], factor * across[1]), (factor * down[0], factor * down[1]),
        trial.lattice.height))


def test_noises_lattice_at_a_right_horizon_gets_the_smaller_copys() -> None:
    photo, tile = _photo()
    assert framed._working_copy(photo).size == photo.size  # read at its own size
    found = _found()
    noise = _noise_trial()
    assert abs(_length(noise.lattice) / tile - 1) > 0.3  # the tile's peak hidden
    small = _smaller(photo)
    extra = perspective._as_coarse_sees(small, [noise], max(photo.size) / max(small.size))
    assert len(extra) == 1
    assert extra[0].horizon == noise.horizon and extra[0].image is noise.image
    # The flattened copy keeps the scale at the frame's centre (its map's derivative there is
    # the affine part's): the tile's length within a few per cent.
    assert abs(_length(extra[0].lattice) / tile - 1) < 0.06
    # ...and `horizons` of a photo at its own size tries it, after its own trials.
    unreduced = perspective.horizons(photo, unreduced=True)
    assert unreduced is not None
    assert [(trial.horizon, trial.lattice) for trial in unreduced.trials[: len(found.trials)]
            ] == [(trial.horizon, trial.lattice) for trial in found.trials]
    assert any(abs(_length(trial.lattice) / tile - 1) < 0.06 for trial in unreduced.trials)


def test_the_smaller_copys_own_lattice_or_a_harmonic_of_it_adds_nothing() -> None:
    photo, _ = _photo()
    small = _smaller(photo)
    ratio = max(photo.size) / max(small.size)
    seen = perspective._as_coarse_sees(small, [_noise_trial()], ratio)
    assert len(seen) == 1
    for factor in (1.0, 2.0, 0.5):
        assert perspective._as_coarse_sees(small, [_times(seen[0], factor)], ratio) == []


def test_the_trial_near_the_text_seed_shows_the_tile() -> None:
    """Neither of the two best coarse trials lies near the text's seed (0.1 from it: one shows
    noise's lattice of 43 px, the other one 4.5 % off the tile's); the best trial near the
    seed, refined in the second's place (`perspective._worth_refining`), shows the tile's and
    comes first."""
    _, tile = _photo()
    first = _found().trials[0]
    assert abs(_length(first.lattice) / tile - 1) < 0.06

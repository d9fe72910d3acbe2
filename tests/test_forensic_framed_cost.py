"""What a photo framed on the page costs when it names no view (docs/leak-tracing.md, "Limits":
"Unmarked page-like images cost more"). Such a photo shows no page edge, so the framed
reading (`render.forensic.framed`: the perspective from the page's own lines, then the
mark's lattice) runs to its end on it: its vanishing-line trials and the folds of the
lattices they show (those the coarse copy showed too; the search is not run first: the
text's lines show the perspective). The cost is held to a yardstick measured in the same test
(`bench.leakmark_misses.yardstick`: the decoder's kinds of work, fixed), so that a loaded
machine weighs on both; and the same photo marked still names its view. The photo is made by
the frozen generator of the untuned families (`bench.leakmark_untuned.filled`). The framed
reading's coarse folds, batched (`coarse.sheared_scores`), score every trial as a fold of
that trial alone does (`coarse.scores`)."""

from __future__ import annotations

import functools
import importlib
import random
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_misses import cpu_seconds, yardstick
from bench.leakmark_untuned import filled
from render.forensic import coarse, decode, framed, perspective, photo, rectify
from render.forensic.layout import PUBLIC, Layout
from tests import forensic_store
from tests.forensic_pages import marked_cover, served_cover

# The camera's draws and four decodes: about 10 s of CPU, a minute on a loaded machine.
slow = pytest.mark.slow
pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop
RENDER_ID = 0x3C1D5E7F0A2
SEED = 2  # the generator's draws for this leak: yaw, pitch, roll, framing, light, saves

decode_module = importlib.import_module("render.forensic.decode")  # the package exports `decode`
fixture_store = forensic_store.fixture_store  # this module's fixture
Photo = Callable[[bool], Image.Image]


@pytest.fixture(scope="module")
def framed_photo(fixture_store: forensic_store.FixtureStore) -> Photo:
    """The text cover served (marked or not), photographed by `filled` at SEED."""

    @functools.cache
    def photographed_as(mark: bool) -> Image.Image:
        served = marked_cover(RENDER_ID) if mark else served_cover()
        return fixture_store.kept("framed-photo-cost", [served, SEED],
                                  lambda: filled(served, random.Random(SEED)))

    return photographed_as


@slow
def test_the_photo_shows_no_page_edge(framed_photo: Photo) -> None:
    grey = framed_photo(False).convert("L")
    corners = rectify.page_corners(grey)
    assert corners is None or not photo.edges_seen(grey, corners)


@slow
def test_an_unmarked_photo_framed_on_the_page_costs_a_few_yardsticks(
        framed_photo: Photo) -> None:
    image = framed_photo(False)
    assert decode(image) is None  # the first decode pays for imports and FFT plans
    costs, yardsticks = [], []
    for _ in range(2):
        costs.append(cpu_seconds(lambda: decode(image)))
        yardsticks.append(yardstick())
    # Measured at a load of 15-22: 19-20 yardsticks (2.0 s of CPU, yardstick 0.1 s), where a
    # miss's target of 0.5 s is 5: the vanishing-line trials about half, the folds a fifth.
    assert min(costs) < 28.0 * min(yardsticks), (costs, yardsticks)


@slow
@pytest.mark.parametrize("mark", [False, True], ids=["unmarked", "marked"])
def test_a_photo_whose_text_shows_its_perspective_is_not_searched(
        framed_photo: Photo, mark: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text's seed lies beyond the tilt the search reads through (`_SEARCHED_TILT`), so
    the search (0.4-0.9 s of such a photo) is left out, marked or not; the marked photo is
    named by the framed reading (the module's one decode of it)."""
    tilt = framed.text_tilt(framed.lines(framed_photo(mark).convert("L")))
    assert tilt is not None and tilt >= decode_module._SEARCHED_TILT
    searched: list[object] = []
    monkeypatch.setattr(decode_module, "_search", lambda *args: searched.append(args))
    assert decode(framed_photo(mark)) == (RENDER_ID if mark else None)
    assert searched == []


def _coarse_trials(work: Image.Image, line: perspective.RowsLine,
                   monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Where along the pattern's `line` each coarse trial `perspective.horizons` makes of
    `work` lies (the flattenings of its smaller copy), appended as they are made."""
    coarse_size = (round(work.width * perspective._COARSE_SHARE),
                   round(work.height * perspective._COARSE_SHARE))
    tried: list[float] = []
    flattened = perspective.flattened

    def recorded(grey: Image.Image, horizon: np.ndarray,
                 expected: perspective.Expected | None = None) -> perspective.Flattened:
        if grey.size == coarse_size:
            tried.append(float((np.asarray(horizon) - line.nearest) @ line.direction))
        return flattened(grey, horizon, expected)

    monkeypatch.setattr(perspective, "flattened", recorded)
    return tried


@slow
@pytest.mark.parametrize("mark", [False, True], ids=["unmarked", "marked"])
def test_a_page_whose_text_gives_a_seed_is_tried_near_it_only(
        framed_photo: Photo, mark: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The coarse trials along the pattern's line lie within `_SEEDED_REACH` of the text's
    seed, marked or not (the whole line, 43 trials on the unmarked photo, was an
    unmarked photo's largest cost); the marked photo is named from them. A refined trial's
    lattice is folded only when the coarse copy showed it there too
    (`perspective._same_lattice`): the unmarked photo's refined lattices are chance's and
    none is folded (two were, 0.5 s each), the marked photo's is the tile's, folded and
    named."""
    grey = framed_photo(mark).convert("L")
    work = framed._working_copy(grey)
    line = perspective.rows_line(work)
    assert line is not None and line.seed is not None
    seed_at = float((line.seed - line.nearest) @ line.direction)
    tried = _coarse_trials(work, line, monkeypatch)
    folded: list[float] = []
    read = framed._read

    def folds(flat: Image.Image, across: np.ndarray, rows: float,
              plan: Layout) -> tuple[int, float] | None:
        folded.append(float(np.hypot(*across)))
        return read(flat, across, rows, plan)

    monkeypatch.setattr(framed, "_read", folds)
    reading = framed.read_framed(grey, PUBLIC)
    assert (reading.found is not None and reading.found[0] == RENDER_ID) == mark
    assert len(folded) == int(mark), folded  # the marked photo named at its first fold
    assert 0 < len(tried) <= 13, tried
    assert max(abs(along - seed_at) for along in tried) <= perspective._SEEDED_REACH + 1e-9


@slow
def test_a_seed_in_doubt_steers_no_trial(framed_photo: Photo,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed the text's windows cannot fix along the pattern's line (`text_seed`: a page of
    one text line; measured, one lay 0.54 from its photo's `v`) keeps no trial near it: the
    whole line is tried, as on a page whose text gives no seed. This photo's own seed is
    fixed (its text covers the page: the test above keeps to it)."""
    grey = framed_photo(False).convert("L")
    work = framed._working_copy(grey)
    line = perspective.rows_line(work)
    assert line is not None and line.seed is not None and not line.seed_doubtful
    seed_at = float((line.seed - line.nearest) @ line.direction)
    tried = _coarse_trials(work, line, monkeypatch)
    perspective.horizons(work, line=line._replace(seed_doubtful=True))
    span = np.sqrt(perspective._REACH ** 2 - float(line.nearest @ line.nearest))
    assert len(tried) == len(np.arange(-span, span + 1e-9, perspective._STEP)) > 30, tried
    assert max(abs(along - seed_at) for along in tried) > 2 * perspective._SEEDED_REACH


def test_the_batched_coarse_folds_score_each_trial_as_it_scores_alone() -> None:
    """Points spread over a tile-sized field, a sync tile's chips faintly in them (so the
    scores are a mark's, not only chance's), at the framed reading's grid of aspects and
    shears (`render.forensic.framed._candidates`)."""
    rng = np.random.default_rng(3)
    count, scale = 20_000, 0.55
    ys, xs = rng.uniform(-500, 500, count), rng.uniform(-400, 400, count)
    chip = (np.floor(ys / (8 * scale * 1.02)).astype(int) * 7
            + np.floor((xs - 0.004 * ys) / (8 * scale)).astype(int) * 3) % 5 == 0
    values = rng.normal(0.0, 3.0, count) - 1.5 * chip
    aspects = np.exp(np.arange(-0.1, 0.1 + 1e-9, 0.005))
    shears = np.array([0.004 + offset + 0.01 * (aspects - 1) for offset in
                       (-0.01, -0.005, 0.0, 0.005, 0.01)])
    batched = coarse.sheared_scores((ys, xs, values), scale, aspects, shears, PUBLIC)
    alone = [float(coarse.scores((ys, xs - shear * ys, values),
                                 np.array([[scale, scale * aspect]]), 0.0, PUBLIC)[0])
             for shear_row in shears for aspect, shear in zip(aspects, shear_row, strict=True)]
    assert batched.shape == (shears.size,)
    np.testing.assert_allclose(batched, alone, rtol=0, atol=1e-9)
    assert len(set(np.round(alone, 6))) > shears.size // 2  # distinct trials, not one score

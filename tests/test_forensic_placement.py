"""The placement mark (docs/leak-tracing.md, "The placement mark"): the pattern's words moved by
a keyed field per page view, read back blind from a leak and scored against candidate views
as the service judges them (`vaultd.services.tracing.placement.named_view`). The best wash the
code allows, without the key: the invisible mark's chips observed and levelled, and every word
moved half-way back to its place, the page still readable (PSNR >= 35 dB)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_attacks import ATTACKS, jpeg, psnr
from bench.leakmark_wash import WASHES, blended, moved_back
from render.forensic import decode, placement, placement_read
from render.forensic.layout import keyed
from render.forensic_wire.evidence import CELLS, COLUMNS, ROWS, SEED_BYTES, BadEvidence, Evidence
from tests import forensic_store
from tests.forensic_pages import marked_cover, text_cover
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing.placement import named_view, parse_standings

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

MARK = MarkCipher.from_key(bytes(range(40, 72)))
RENDER = 0x0123_4567_89A
VALUE = 0x15A2_B3C4_D5E  # what the invisible mark carries (its sealed form, in vaultd)
READABLE_DB = 35.0
WASH = "observed chips, no key"

fixture_store = forensic_store.fixture_store  # this module's fixture


def _served(seed: bytes | None) -> Image.Image:
    return marked_cover(VALUE, MARK.layout_key, seed)


def _candidates(count: int = 300) -> list[int]:
    rng = random.Random(11)
    others = [rng.getrandbits(45) for _ in range(count - 1)]
    return [*others[: count // 2], RENDER, *others[count // 2:]]


def best_view(evidence: Evidence, render_ids: list[int], mark: MarkCipher) -> int | None:
    """The service's verdict, scored in this process as a worker scores it."""
    seeds = [mark.placement_seed(render_id) for render_id in render_ids]
    return named_view(placement.standings(evidence, seeds), render_ids)


def _named(leak: Image.Image) -> int | None:
    evidence = placement_read.read(leak)
    assert evidence is not None, "no pattern lattice read"
    return best_view(evidence, _candidates(), MARK)


def _washed(share: float) -> Image.Image:
    """The invisible mark washed off without the key, every word moved `share` of the way
    back (with the true offsets: no washer measures them better); `moved_back` finds the
    largest share that keeps the page readable."""
    served = _served(MARK.placement_seed(RENDER))
    home = _served(None)
    return WASHES[WASH](blended(served, home, share), text_cover().page_height, keyed(None))


def test_moving_the_words_costs_the_invisible_mark_nothing() -> None:
    moved, still = _served(MARK.placement_seed(RENDER)), _served(None)
    assert decode(moved, keyed(MARK.layout_key)) == VALUE
    # The words moved: the pattern's pixels differ (as much as a 1-px move of every word).
    assert 25.0 < psnr(still, moved) < 35.0


def test_a_served_page_names_its_view_among_the_candidates() -> None:
    assert _named(_served(MARK.placement_seed(RENDER))) == RENDER


def test_a_page_without_the_placement_mark_names_no_view() -> None:
    assert _named(_served(None)) is None


@pytest.fixture(scope="module")
def best_wash(fixture_store: forensic_store.FixtureStore) -> tuple[Image.Image, float]:
    """The words moved back as far as the page stays readable, the chips levelled: twelve
    washes tried, about 10 s of CPU, kept from one run to the next (`tests.forensic_store`)."""
    served, home = _served(MARK.placement_seed(RENDER)), _served(None)
    page_height = text_cover().page_height
    return fixture_store.kept("best-wash", [served, home, page_height, READABLE_DB],
                              lambda: moved_back(served, home, page_height, READABLE_DB))


def test_the_best_wash_of_the_code_leaves_the_placement_mark(
        best_wash: tuple[Image.Image, float]) -> None:
    served = _served(MARK.placement_seed(RENDER))
    washed, share = best_wash
    assert share >= 0.3 and psnr(served, washed) >= READABLE_DB
    assert decode(washed, keyed(MARK.layout_key)) is None  # the invisible mark is gone
    assert _named(washed) == RENDER


def test_moving_every_word_home_removes_it_and_the_page_pays() -> None:
    """The control (the read can fail): all the way back, nothing names the view, and the
    page is no longer within the readable 35 dB of what was served."""
    washed = _washed(1.0)
    assert psnr(_served(MARK.placement_seed(RENDER)), washed) < READABLE_DB
    assert _named(washed) is None


def test_the_best_wash_halved_still_names_the_view(best_wash: tuple[Image.Image, float]) -> None:
    """A leak half the served size is measured in windows overlapping by half and its words
    grown less (side by side and grown as served, this page's halves read z 0)."""
    washed = best_wash[0]
    shrunk = ATTACKS["downscale 50%"](washed, text_cover().page_height, random.Random(4))
    assert _named(shrunk) == RENDER


def test_letters_too_near_the_paper_are_not_measured() -> None:
    """A raised tone lifts the pattern's letters to within 24 levels of the paper, where no
    window shows the contrast to measure: nothing is read (nor paid for)."""
    served = _served(MARK.placement_seed(RENDER))
    raised = ATTACKS["brightness +20%"](served, text_cover().page_height, random.Random(4))
    assert placement_read.read(raised) is None
    assert placement_read.read(served) is not None


def test_a_page_beside_a_surround_is_not_read() -> None:
    """The cells are the page's, from its width: a screenshot with a desktop beside the page
    could only mislead, and is not read (nor paid for); a page whole, shrunk, still is."""
    served = _served(MARK.placement_seed(RENDER))
    shown = ATTACKS["screenshot"](served, text_cover().page_height, random.Random(4))
    assert placement_read.read(shown) is None
    size = (served.width * 3 // 4, served.height * 3 // 4)
    assert _named(jpeg(served.resize(size, Image.Resampling.LANCZOS), 85)) == RENDER


def test_each_view_has_its_own_seed_and_field() -> None:
    seed = MARK.placement_seed(RENDER)
    assert len(seed) == SEED_BYTES and seed == MARK.placement_seed(RENDER)
    assert seed != MARK.placement_seed(RENDER + 1)
    assert seed != MarkCipher.from_key(bytes(32)).placement_seed(RENDER)  # another deployment
    drawn = placement.field(seed)
    assert drawn.shape == (ROWS, COLUMNS, 2)
    assert set(np.unique(drawn)) == {-1, 0, 1}
    assert (drawn != placement.field(MARK.placement_seed(RENDER + 1))).mean() > 0.5
    # A trace draws only the rows its leak shows: the same values as the whole field's.
    assert np.array_equal(placement.fields([seed], rows=37)[0], drawn[:37])


def test_a_lying_worker_names_only_views_whose_seed_it_was_given() -> None:
    """A taken-over worker knows the seeds of the pages it drew, no other: evidence made to
    fit any field but a candidate's names none of them, however strong."""
    forged_field = placement.field(b"worker's own guess")
    cells = np.arange(CELLS)
    flat = forged_field.reshape(CELLS, 2).astype(np.float64)
    counts = np.full(CELLS, 50.0)
    forged = Evidence(counts, flat * counts[:, None], flat ** 2 * counts[:, None])
    assert forged.windows == 50 * len(cells)
    assert best_view(forged, _candidates(), MARK) is None


def test_evidence_crosses_as_bytes_and_is_checked() -> None:
    offsets = np.array([[0.5, -1.0], [1.0, 0.0], [-0.2, 0.3]])
    evidence = Evidence.of(offsets, np.array([0, 0, CELLS - 1]))
    again = Evidence.from_bytes(evidence.to_bytes())
    assert np.array_equal(again.counts, evidence.counts)
    assert np.array_equal(again.sums, evidence.sums)
    assert again.sums[0].tolist() == [1.5, -1.0] and again.counts[CELLS - 1] == 1
    raw = evidence.to_bytes()
    with pytest.raises(BadEvidence, match="wrong size"):
        Evidence.from_bytes(raw[:-8])
    table = np.frombuffer(raw, dtype="<f8").copy().reshape(CELLS, 5)
    for cell, column, value in ((0, 1, math.nan), (0, 0, -1.0), (0, 0, 2.5), (0, 1, 50.0),
                                (1, 3, -0.5)):
        bad = table.copy()
        bad[cell, column] = value
        with pytest.raises(BadEvidence, match="out of bounds"):
            Evidence.from_bytes(bad.astype("<f8").tobytes())


def test_a_worker_s_standings_are_parsed_and_a_lie_names_no_view() -> None:
    # The scoring runs in a worker (`score_placement`); its answer is untrusted like its evidence.
    honest = np.array([0.5, 7.25, -1.0]).astype("<f8").tobytes()
    assert parse_standings(honest, 3) is not None
    assert list(parse_standings(honest, 3)) == [0.5, 7.25, -1.0]  # type: ignore[arg-type]
    lies = {"short": honest[:-1], "one too many": honest + honest[:8],
            "NaN": np.array([0.0, math.nan, 9.0]).astype("<f8").tobytes(),
            "infinite": np.array([math.inf, 0.0, 0.0]).astype("<f8").tobytes(),
            "not bytes": [0.5, 7.25, -1.0]}
    assert {name: parse_standings(raw, 3) for name, raw in lies.items()} == dict.fromkeys(lies)

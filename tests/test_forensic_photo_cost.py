"""What a phone photo of a screen costs when it names no view (docs/leak-tracing.md, "Phone
photos of a screen": a miss is bounded in worker time). Its page's edges are seen against the
screen's darker surround, so the corners' reading, which found nothing, settles it: the
framed reading (the perspective from the page's own lines, for photos that show no edge)
is not tried. The cost is held to a yardstick measured in the same test
(`bench.leakmark_misses.yardstick`: the decoder's kinds of work, fixed), so that a loaded
machine weighs on both; and the same photo marked still names its view."""

from __future__ import annotations

import functools
import importlib
import random
from collections.abc import Callable

import pytest
from PIL import Image

from bench.leakmark_misses import cpu_seconds, yardstick
from bench.leakmark_phone import Corners, photographed
from render.forensic import decode, photo, rectify
from tests import forensic_store
from tests.forensic_pages import marked_cover, served_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

RENDER_ID = 0x2B4D6F8A1C3
SEED = 4  # the page in perspective: the case the framed reading would follow

decode_module = importlib.import_module("render.forensic.decode")  # the package exports `decode`
fixture_store = forensic_store.fixture_store  # this module's fixture
Photo = Callable[[bool], tuple[Image.Image, Corners]]


@pytest.fixture(scope="module")
def phone_photo(fixture_store: forensic_store.FixtureStore) -> Photo:
    """The text cover served (marked or not), photographed at SEED, and its corners."""

    @functools.cache
    def photographed_as(mark: bool) -> tuple[Image.Image, Corners]:
        served = marked_cover(RENDER_ID) if mark else served_cover()
        return fixture_store.kept("phone-photo-cost", [served, SEED],
                                  lambda: photographed(served, random.Random(SEED)))

    return photographed_as


def test_an_unmarked_phone_photo_costs_a_few_yardsticks(phone_photo: Photo) -> None:
    image, truth = phone_photo(False)
    assert rectify.needs_rectifying(truth)  # in perspective: the framed reading's case
    assert decode(image) is None  # the first decode pays for imports and FFT plans
    costs, yardsticks = [], []
    for _ in range(2):
        costs.append(cpu_seconds(lambda: decode(image)))
        yardsticks.append(yardstick())
    # Measured at a load of 7-20: 6.3 yardsticks; with the framed reading after the corners'
    # one, 22-23.
    assert min(costs) < 9.0 * min(yardsticks), (costs, yardsticks)


@pytest.mark.parametrize("mark", [False, True], ids=["unmarked", "marked"])
def test_a_page_whose_edges_are_seen_in_perspective_is_not_searched(
        phone_photo: Photo, mark: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search (steps 1-4, no perspective) is left out for the photo reading, marked or
    not; the marked photo is named by the photo reading (the module's one decode of it: the
    same photo marked still names its view)."""
    searched: list[object] = []
    monkeypatch.setattr(decode_module, "_search", lambda *args: searched.append(args))
    assert decode(phone_photo(mark)[0]) == (RENDER_ID if mark else None)
    assert searched == []


def test_a_page_on_a_screen_shows_its_edges(phone_photo: Photo) -> None:
    image, truth = phone_photo(False)
    grey = image.convert("L")
    found = rectify.page_corners(grey)
    assert found is not None
    assert photo.edges_seen(grey, found)
    assert photo.edges_seen(grey, truth)


def _box(left: float, top: float, right: float, bottom: float) -> rectify.Corners:
    return [(left, top), (right, top + 8), (right - 6, bottom), (left + 4, bottom - 5)]


def test_a_page_shows_its_edges_only_against_a_darker_surround() -> None:
    page = served_cover().convert("L")
    width, height = page.size
    on_desk = Image.new("L", (width + 300, height + 300), 90)
    on_desk.paste(page, (150, 150))
    assert photo.edges_seen(on_desk, _box(150, 150, 150 + width, 150 + height))
    # A text block's outline inside the page: paper (and text) around it.
    assert not photo.edges_seen(page, _box(0.15 * width, 0.15 * height, 0.85 * width,
                                           0.8 * height))
    # A quadrilateral along the frame's border (a photo framed on the page): no surround.
    assert not photo.edges_seen(page, _box(8, 12, width - 10, height - 9))
    # The desk as light as the paper: no edge seen.
    on_paper = Image.new("L", on_desk.size, 235)
    on_paper.paste(page, (150, 150))
    assert not photo.edges_seen(on_paper, _box(150, 150, 150 + width, 150 + height))

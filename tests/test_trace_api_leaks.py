"""Every leak of the issue traced over HTTP (the long tier: `test_trace_api.py` traces one of
each reading in the landing run): both served pages through every leak of
`tests/trace_leaks.py`, 40 unmarked images and the unmarked pattern's hardest readings, each
read by a confined worker to its end."""

from __future__ import annotations

import httpx
import pytest

from tests.trace_leaks import (
    BEST_EFFORT_LEAKS,
    LEAKS,
    PATTERN_LEAKS,
    assert_never_found,
    assert_pattern_pages_never_found,
    serve_two_pages,
    traced_leaks,
    unmarked_images,
)
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def test_every_leak_of_both_pages_traces_back_to_its_view(
    vault: VaultProcess, api: httpx.Client
) -> None:
    served = serve_two_pages(vault, api)
    every = LEAKS + BEST_EFFORT_LEAKS
    found, missed = traced_leaks(vault, api, served, [every, every], BEST_EFFORT_LEAKS)
    # The layout is keyed per deployment and the pattern's words hold the view's time: how well
    # a leak reads varies a little with both. A miss is an empty answer, never another view.
    assert len(missed) <= 1, missed
    assert found >= 2 * len(LEAKS) - 1


# The page at three scales, then each other kind (photographs, noise, flat, gradients) about
# nine times at its random sizes (`test_trace_api.py` reads one of each).
UNMARKED = 40


def test_forty_unmarked_images_are_never_found(api: httpx.Client) -> None:
    images = unmarked_images(UNMARKED)
    assert len(images) == UNMARKED
    assert_never_found(api, images)


def test_unmarked_pages_with_the_pattern_go_through_every_reading(api: httpx.Client) -> None:
    assert_pattern_pages_never_found(api, PATTERN_LEAKS)

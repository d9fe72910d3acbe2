"""Every leak of the issue traced over HTTP (the long tier: `test_trace_api.py` traces one of
each reading in the landing run): both served pages through every leak of
`tests/trace_leaks.py`, 40 unmarked images and the unmarked pattern's hardest readings, each
read by a confined worker to its end."""

from __future__ import annotations

import random
from typing import Any

import httpx
import pypdfium2 as pdfium
import pytest

from bench.leakmark_attacks import ATTACKS, render_page
from tests import documents as docs
from tests.trace_leaks import (
    BEST_EFFORT_LEAKS,
    LEAKS,
    PATTERN_LEAKS,
    assert_never_found,
    fmt_of,
    serve_two_pages,
    trace,
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
    page = render_page(pdfium.PdfDocument(docs.pdf()), 0)  # the others differ by a digit
    rng = random.Random(7)
    for name in PATTERN_LEAKS:
        leaked = ATTACKS[name](page.image, page.page_height, rng)
        response = trace(api, leaked, fmt_of(name))
        answer: Any = (response.status_code, response.json())
        assert answer == (200, {"found": False}), name

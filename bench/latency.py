"""Page latency over HTTP against the bare render and pdftoppm, interleaved page by page.

For every sampled page the three are timed back to back, in an order that rotates, so a burst
of load from elsewhere on a shared machine hits all three alike; the figures that matter are
the ratios within one run.
"""

from __future__ import annotations

import io
import statistics
from dataclasses import dataclass, field

from PIL import Image

from bench.baselines import BareRenderer, Pdftoppm
from bench.corpus import Document
from bench.server import Client
from render.wire.model import PixelBudget


@dataclass
class PageTimes:
    """Seconds per sampled page render, for one document."""

    name: str
    pages: list[int]
    http: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    poppler: list[float] = field(default_factory=list)
    # vaultd's time over the baseline's for the same page, measured back to back in one round.
    # Their p50 is the target's figure: the p50s above mix a document's pages, and for pages of
    # unequal cost (a text page and a near-blank one) each p50 can land on a different page.
    over_bare: list[float] = field(default_factory=list)
    over_poppler: list[float] = field(default_factory=list)
    failures: int = 0


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def sample_pages(count: int, wanted: int) -> list[int]:
    """Up to `wanted` page numbers spread evenly over 1..count (first and last included)."""
    if count <= wanted:
        return list(range(1, count + 1))
    return sorted({1 + round(i * (count - 1) / (wanted - 1)) for i in range(wanted)})


def _check_size(jpeg: bytes, size: tuple[int, int]) -> None:
    # vaultd's image is the page plus the strip below (and margins for a very narrow page).
    width, height = Image.open(io.BytesIO(jpeg)).size
    if width < size[0] or not size[1] < height < size[1] + 400:
        raise RuntimeError(f"vaultd page is {width}x{height}, expected {size} plus the strip")


def measure(client: Client, token: str, doc: Document, budget: PixelBudget, wanted: int,
            rounds: int) -> PageTimes:
    pages = sample_pages(doc.pages, wanted)
    times = PageTimes(doc.name, pages)
    # As many samples for a short document as for a long one: more rounds over its few pages.
    rounds = -(-wanted * rounds // len(pages))
    bare, poppler = BareRenderer(doc.data, budget), Pdftoppm(doc.data)
    try:
        _warm(client, token, pages)
        for turn in range(rounds):
            for index, number in enumerate(pages):
                size = bare.size(number)
                kinds = ["http", "bare", "poppler"]
                shift = (turn + index) % 3
                counts = (len(times.http), len(times.bare), len(times.poppler))
                for kind in kinds[shift:] + kinds[:shift]:
                    _step(kind, client, token, number, size, bare, poppler, times)
                _pair(times, counts)
    finally:
        bare.close()
        poppler.close()
    return times


def _pair(times: PageTimes, counts: tuple[int, int, int]) -> None:
    """Ratios for the round just measured, where vaultd answered and the baseline ran."""
    if len(times.http) == counts[0]:
        return  # vaultd's answer was not a 200: nothing to compare
    if len(times.bare) > counts[1]:
        times.over_bare.append(times.http[-1] / times.bare[-1])
    if len(times.poppler) > counts[2]:
        times.over_poppler.append(times.http[-1] / times.poppler[-1])


def _step(kind: str, client: Client, token: str, number: int, size: tuple[int, int],
          bare: BareRenderer, poppler: Pdftoppm, times: PageTimes) -> None:
    if kind == "http":
        _http(client, token, number, size, times)
    elif kind == "bare":
        times.bare.append(bare.render(number)[0])
    elif poppler.available:
        times.poppler.append(poppler.render(number, size))


def _warm(client: Client, token: str, pages: list[int]) -> None:
    # Each worker opens the document once; those first opens are measured apart (cold_open).
    for number in pages[:3]:
        client.page(token, number)


def _http(client: Client, token: str, number: int, size: tuple[int, int],
          times: PageTimes) -> None:
    reply = client.page(token, number)
    if reply.status != 200:
        times.failures += 1
        return
    _check_size(reply.body, size)
    times.http.append(reply.seconds)


def cold_open(client: Client, token: str) -> float:
    """The first page of a document no worker has opened yet (blob verification, PDF parse)."""
    reply = client.page(token, 1)
    if reply.status != 200:
        raise RuntimeError(f"page 1 answered {reply.status}")
    return reply.seconds


def first_pages(client: Client, small: str, large: str, rounds: int) -> tuple[list[float],
                                                                                list[float]]:
    """Page 1 of the small and of the 20 MB PDF, alternated."""
    small_times, large_times = [], []
    for _ in range(rounds):
        small_times.append(client.page(small, 1).seconds)
        large_times.append(client.page(large, 1).seconds)
    return small_times, large_times

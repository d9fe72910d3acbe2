"""Time per page as an SVG bar chart, drawn on the server: no script, no style attribute (the
CSP allows neither inline), only geometry. The page puts the same numbers in a table for
screen readers; the chart itself is an image with a summary for its name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BAR_WIDTH = 24
GAP = 8
HEIGHT = 160
LABEL_SPACE = 20
MAX_BARS = 200  # a longer document's chart shows its first pages; the table holds them all


@dataclass(frozen=True)
class Bar:
    x: int
    y: int
    width: int
    height: int
    label_x: int
    page: int
    seconds: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    summary: str


def time_chart(pages: Sequence[Any]) -> Chart:
    """Bars of `seconds` per page (the rows of `analytics.file_pages.totals`)."""
    shown = list(pages)[:MAX_BARS]
    most = max((float(row["seconds"]) for row in shown), default=0.0)
    bars = []
    for index, row in enumerate(shown):
        seconds = float(row["seconds"])
        height = round(HEIGHT * seconds / most) if most else 0
        x = GAP + index * (BAR_WIDTH + GAP)
        bars.append(Bar(x, HEIGHT - height, BAR_WIDTH, height, x + BAR_WIDTH // 2,
                        int(row["page"]), seconds))
    busiest = max(shown, key=lambda row: float(row["seconds"]), default=None)
    summary = ("No reading time recorded yet." if not most or busiest is None else
               f"Seconds read per page; the most on page {busiest['page']} "
               f"({float(busiest['seconds']):.0f} s). The table below has every page.")
    return Chart(GAP + len(bars) * (BAR_WIDTH + GAP), HEIGHT + LABEL_SPACE, bars, summary)

"""A placement trace reads the day the leak's pattern prints (docs/leak-tracing.md, "A year of
views"): a washed leak of a view older than its page's cap reaches is named through that day's
views; the same view whose pattern prints another day is not (the cap holds); the worker's date
scores rank the printed day first, as served and rescaled; the days are local days of the
watermark's zone; a worker's answer of the wrong length gives no days. Sizes scaled down (a cap
of 300 views, chunks of 100); the database, the worker pool, the reading and the scoring are
the real ones."""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_attacks import jpeg
from bench.leakmark_year import dated
from render.forensic.trace_task import read_leak
from render.forensic_wire.evidence import EVIDENCE_BYTES
from render.forensic_wire.page_print import PRINT_BYTES
from render.pool.render_pool import RenderPool
from render.watermark.date_words import date_templates
from tests import placement_harness
from tests.forensic_pages import text_cover
from vaultd.db import Db
from vaultd.services.tracing import candidates, days, placement
from vaultd.timefmt import PARIS, utcnow

pytestmark = pytest.mark.slow  # its own database server and worker pool

MARK = placement.MarkCipher.from_key(bytes(range(11, 43)))
ACCOUNT = "acct-days"
LEAKED = 0x1_3579_2468
LEAKED_DAYS_AGO = 200.3
# The leaked view, 400 of its page since (more than the cap; none on the leaked view's day),
# and as many of another page this week.
YEAR = placement_harness.YearOfViews(
    name="days", account=ACCOUNT, leaked=LEAKED, leaked_days_ago=LEAKED_DAYS_AGO, newer=400,
    newer_within_days=190, other_within_days=7, seed=4)


server, db, pool = (placement_harness.server, placement_harness.db,
                    placement_harness.pool)  # this module's fixtures


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _washed(shown_at: datetime, scale: float = 1.0) -> Image.Image:
    """The text cover as the leaked view was served, its pattern printing `shown_at`, washed
    of its invisible mark (then rescaled and saved at JPEG q60 when `scale` is not 1)."""
    washed = placement_harness.washed_leak(dated(text_cover(), shown_at), 0x55, MARK, LEAKED)
    if scale == 1.0:
        return washed
    small = washed.resize((round(washed.width * scale), round(washed.height * scale)),
                          Image.Resampling.LANCZOS)
    return jpeg(small, 60)


async def test_a_view_beyond_the_cap_is_named_by_the_day_its_pattern_prints(
        db: Db, pool: RenderPool, monkeypatch: pytest.MonkeyPatch) -> None:
    now = utcnow()
    await placement_harness.seed_year_of_views(db, MARK, YEAR, now)
    monkeypatch.setattr(candidates, "CHUNK", 100)
    monkeypatch.setattr(candidates, "NEWEST", 300)  # all of them the other page's
    monkeypatch.setattr(placement, "YEAR_CAP", 300)  # the page's 300 newest: not the leaked
    leaked_at = now - timedelta(days=LEAKED_DAYS_AGO)
    found = await placement.placement_match(db, pool, MARK, ACCOUNT,
                                            _png(_washed(leaked_at)), 1600)
    assert found == LEAKED
    # The same view whose pattern printed a day its page has no view on: the cap holds.
    elsewhere = _png(_washed(now - timedelta(days=LEAKED_DAYS_AGO + 40)))
    assert await placement.placement_match(db, pool, MARK, ACCOUNT, elsewhere, 1600) is None


@pytest.mark.parametrize("scale", [1.0, 0.6])
def test_the_printed_day_scores_best_of_the_year(scale: float) -> None:
    now = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
    dates = days.year_dates(now, PARIS)
    shown = now - timedelta(days=123.4)
    raw = read_leak(_png(_washed(shown, scale)), 1600, MARK.page_print_key, dates,
                    date_templates)
    assert raw is not None
    scores, rest = placement.parse_days(raw[EVIDENCE_BYTES:], len(dates))
    assert len(rest) == PRINT_BYTES
    assert days.best_days(scores, dates)[0] == shown.astimezone(PARIS).date().isoformat()
    # Without the dates' words, the worker reads no day: its scores are NaN.
    blind = read_leak(_png(_washed(shown, scale)), 1600, MARK.page_print_key, dates, None)
    assert blind is not None
    unread, _ = placement.parse_days(blind[EVIDENCE_BYTES:], len(dates))
    assert all(math.isnan(score) for score in unread) and days.best_days(unread, dates) == []


def test_the_days_are_the_zones_local_days() -> None:
    now = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)  # already the 30th in Paris
    dates = days.year_dates(now, PARIS)
    assert dates[0] == "2026-11-30" and dates[-1] == "2025-11-30" and len(dates) == 366
    assert days.year_dates(now, ZoneInfo("America/New_York"))[0] == "2026-11-29"
    start, end = days.day_window("2026-03-29", PARIS)  # a 23-hour day: summer time begins
    assert start == datetime(2026, 3, 28, 23, 0, tzinfo=UTC) - days.MARGIN
    assert end - start == timedelta(hours=23) + 2 * days.MARGIN


def test_a_workers_date_scores_of_the_wrong_length_give_no_days() -> None:
    dates = ["2026-11-29", "2026-11-28", "2026-11-27"]
    good = np.array([0.5, 0.9, 0.7], dtype="<f4").tobytes()
    scores, rest = placement.parse_days(good + bytes(PRINT_BYTES), 3)
    assert days.best_days(scores, dates) == ["2026-11-28", "2026-11-27", "2026-11-29"]
    assert rest == bytes(PRINT_BYTES)
    assert placement.parse_days(good + b"\0", 3) == ([], b"")  # not the scores, nor a print
    assert placement.parse_days(good[:8], 3) == ([], b"")
    assert days.best_days([0.5, math.inf, 0.7], dates) == []

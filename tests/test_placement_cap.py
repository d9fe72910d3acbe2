"""The bound on a placement trace's candidates (docs/leak-tracing.md, "A year of views"): a
page's views of the year are scored newest first, a chunk at a time, up to YEAR_CAP; a view
older than the cap's reach is given up (then the account's newest views are still scored), and
one within it is named. Sizes scaled down (chunks of 100, a cap of 400 or 800) so that the log
is small; the database, the worker pool, the reading and the scoring are the real ones."""

from __future__ import annotations

import io

import pytest

from render.forensic_wire.page_print import bands
from render.pool.render_pool import RenderPool
from tests import placement_harness
from tests.forensic_pages import text_cover
from vaultd.db import Db
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing import candidates, placement
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # its own database server and worker pool

MARK = MarkCipher.from_key(bytes(range(7, 39)))
ACCOUNT = "acct-cap"
LEAKED = 0x1_2345_6789
# The leaked view 300 days back, 600 of its page since and as many of another page: the
# account's newest views do not hold the leaked one.
YEAR = placement_harness.YearOfViews(
    name="cap", account=ACCOUNT, leaked=LEAKED, leaked_days_ago=300, newer=600,
    newer_within_days=299, other_within_days=9, seed=9)


server, db, pool = (placement_harness.server, placement_harness.db,
                    placement_harness.pool)  # this module's fixtures


def _leak() -> bytes:
    """The text cover as the leaked view was served, washed of its invisible mark."""
    out = io.BytesIO()
    placement_harness.washed_leak(text_cover(), 0x77, MARK, LEAKED).save(out, "PNG")
    return out.getvalue()


async def test_a_view_beyond_the_cap_is_given_up_and_one_within_it_named(
        db: Db, pool: RenderPool, monkeypatch: pytest.MonkeyPatch) -> None:
    await placement_harness.seed_year_of_views(db, MARK, YEAR, utcnow())
    monkeypatch.setattr(candidates, "CHUNK", 100)
    monkeypatch.setattr(candidates, "NEWEST", 300)  # all of them the other page's
    leak = _leak()
    monkeypatch.setattr(placement, "YEAR_CAP", 400)  # the page's 400 newest: not the leaked
    assert await placement.placement_match(db, pool, MARK, ACCOUNT, leak, 1600) is None
    monkeypatch.setattr(placement, "YEAR_CAP", 800)  # all 601 of the page's year
    assert await placement.placement_match(db, pool, MARK, ACCOUNT, leak, 1600) == LEAKED


async def test_a_leak_of_another_page_scores_the_newest_views_only(
        db: Db, pool: RenderPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """No print near the leak's: its candidates are the account's newest views, which do not
    reach the leaked one, so nothing is named."""
    await placement_harness.seed_year_of_views(db, MARK, YEAR, utcnow())
    monkeypatch.setattr(candidates, "NEWEST", 300)
    await db.page_prints.update_one({"_id": "cap-file:1"}, {"$set": {
        "bits": "00" * 32, "bands": bands(bytes(32))}})
    try:
        assert await placement.placement_match(db, pool, MARK, ACCOUNT, _leak(), 1600) is None
    finally:
        await db.page_prints.delete_one({"_id": "cap-file:1"})

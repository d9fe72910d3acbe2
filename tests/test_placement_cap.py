"""The bound on a placement trace's candidates (docs/leak-tracing.md, "A year of views"): a
page's views of the year are scored newest first, a chunk at a time, up to YEAR_CAP; a view
older than the cap's reach is given up (then the account's newest views are still scored), and
one within it is named. Sizes scaled down (chunks of 100, a cap of 400 or 800) so that the log
is small; the database, the worker pool, the reading and the scoring are the real ones."""

from __future__ import annotations

import io
import random
from datetime import timedelta
from typing import Any

import pytest

from bench.leakmark_attacks import SERVED_QUALITY, jpeg, marked
from bench.leakmark_wash import WASHES
from render.forensic.layout import keyed
from render.forensic.placement_page import page_print
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
NEWER = 600  # views of the leaked page newer than the leaked one


server, db, pool = (placement_harness.server, placement_harness.db,
                    placement_harness.pool)  # this module's fixtures


def _leak() -> bytes:
    """The text cover as the leaked view was served, washed of its invisible mark."""
    page = text_cover()
    served = jpeg(marked(page, 0x77, MARK.layout_key, MARK.placement_seed(LEAKED)),
                  SERVED_QUALITY)
    out = io.BytesIO()
    WASHES["observed chips, no key"](served, page.page_height, keyed(None)).save(out, "PNG")
    return out.getvalue()


async def _seed(db: Db) -> None:
    """The page's print, the leaked view 300 days back, NEWER views of the page since, and
    as many of another page: the account's newest views do not hold the leaked one."""
    if await db.page_prints.find_one({"_id": "cap-file:1"}) is not None:
        return
    made = page_print(jpeg(marked(text_cover(), 1, MARK.layout_key, b"another view 000"),
                           SERVED_QUALITY), MARK.page_print_key)
    assert made is not None
    now, rng = utcnow(), random.Random(9)
    await db.page_prints.insert_one({"_id": "cap-file:1", "accountId": ACCOUNT,
                                     "fileId": "cap-file", "page": 1, "bits": made.hex(),
                                     "bands": bands(made), "at": now})

    def view(number: int, file_id: str, render_id: int, days: float) -> dict[str, Any]:
        return {"_id": f"cap-{number}", "accountId": ACCOUNT, "fileId": file_id,
                "action": "page", "page": 1, "at": now - timedelta(days=days),
                "renderId": f"{render_id:012x}", "viewerEmail": "v@example.com"}

    views = [view(0, "cap-file", LEAKED, 300)]
    views += [view(n, "cap-file", rng.getrandbits(44) + (1 << 44), rng.uniform(0, 299))
              for n in range(1, NEWER + 1)]
    views += [view(NEWER + n, "cap-other", rng.getrandbits(44) + (1 << 44), rng.uniform(0, 9))
              for n in range(1, NEWER + 1)]
    await db.raw("access_log").insert_many(views)


async def test_a_view_beyond_the_cap_is_given_up_and_one_within_it_named(
        db: Db, pool: RenderPool, monkeypatch: pytest.MonkeyPatch) -> None:
    await _seed(db)
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
    await _seed(db)
    monkeypatch.setattr(candidates, "NEWEST", 300)
    await db.page_prints.update_one({"_id": "cap-file:1"}, {"$set": {
        "bits": "00" * 32, "bands": bands(bytes(32))}})
    try:
        assert await placement.placement_match(db, pool, MARK, ACCOUNT, _leak(), 1600) is None
    finally:
        await db.page_prints.delete_one({"_id": "cap-file:1"})

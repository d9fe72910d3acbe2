"""A request costs what it returns: with 5,000 files, links and log entries in one account, each
route's queries make the database read at most what the route returns plus a constant.

The size is what keeps a scan well past every bound: a route reading the account's files, the
file's log or its downloads (1,000 of them) or the half of its log before a time reads more than
twice its bound. The property does not grow with it: its reads are its page and a constant.

Measured on the server's side (`tests.db_reads`): every query a route's services send is
replayed as an `explain` of what the embedded database walks for it. The routes are called
through the same service functions their handlers call, against a real embedded SecantusDB;
the data is written in the services' record shapes (`tests.scale_seed`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from tests.scale_seed import Seeded, seed_account
from vaultd.db import Db
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.analytics import analytics_report
from vaultd.services.common import access_log
from vaultd.services.files import files
from vaultd.services.files.files import get_file
from vaultd.services.links import link_records
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

SIZE = 5000
CONSTANT = 40  # reads a route may make beyond what it returns: its own records, window edges


@pytest.fixture(scope="module")
async def big(db: Db) -> Seeded:
    return await seed_account(db, "Big Co", files=SIZE, entries=SIZE, links=SIZE)


async def reads(db: Db, recorder: QueryRecorder, route: Callable[[], Awaitable[Any]]
                ) -> tuple[Any, int]:
    """What `route` returns, and the documents its queries made the database read."""
    with recorder.recorded():
        result = await route()
    return result, await total_examined(db, list(recorder.queries))


async def test_the_file_listing_reads_its_page_not_the_account(
        db: Db, recorder: QueryRecorder, big: Seeded) -> None:
    for per_page in (25, 100):
        listing, read = await reads(db, recorder,
                                    lambda n=per_page: files.list_files(db, big.account_id, 1, n))
        assert listing["total"] == SIZE
        assert len(listing["files"]) == per_page
        assert [file["activeLinks"] for file in listing["files"]] == [0] * per_page
        assert read <= per_page + CONSTANT, f"perPage {per_page}: {read} documents read"


async def test_a_deep_page_reads_what_precedes_it(
        db: Db, recorder: QueryRecorder, big: Seeded) -> None:
    listing, read = await reads(db, recorder, lambda: files.list_files(db, big.account_id, 4, 25))
    assert len(listing["files"]) == 25
    first = await files.list_files(db, big.account_id, 1, 100)
    assert [file["id"] for file in listing["files"]] == [
        file["id"] for file in first["files"][75:]]
    assert read <= 4 * 25 + CONSTANT, f"{read} documents read"


async def test_the_access_log_reads_its_page_not_the_log(
        db: Db, recorder: QueryRecorder, big: Seeded) -> None:
    async def log(**kwargs: Any) -> list[dict[str, Any]]:
        doc = await get_file(db, big.account_id, big.busy_file)
        return await access_log.latest_for_file(db, doc["_id"], since=doc["createdAt"],
                                                **kwargs)

    entries, read = await reads(db, recorder, log)
    assert len(entries) >= access_log.LATEST
    assert read <= 2 * access_log.LATEST + CONSTANT, f"newest: {read} documents read"
    middle = utcnow() - timedelta(days=180)
    entries, read = await reads(db, recorder, lambda: log(before=middle))
    assert len(entries) >= access_log.LATEST
    assert all(entry["at"] < middle.isoformat() for entry in entries)
    assert read <= 2 * access_log.LATEST + CONSTANT, f"before: {read} documents read"
    entries, read = await reads(db, recorder, lambda: log(action="download"))
    assert len(entries) >= access_log.LATEST
    assert {entry["action"] for entry in entries} == {"download"}
    assert read <= 2 * access_log.LATEST + CONSTANT, f"action: {read} documents read"


async def test_the_account_reads_its_counters_not_its_links(
        db: Db, recorder: QueryRecorder, big: Seeded) -> None:
    account = await accounts.get_account(db, big.account_id)
    body, read = await reads(db, recorder, lambda: accounts.account_json(db, account))
    assert body["usage"]["activeLinks"] == big.live_links
    assert body["usage"]["documents"] == SIZE
    assert read <= CONSTANT, f"{read} documents read"


async def test_a_files_analytics_and_a_link_read_their_own_records(
        db: Db, recorder: QueryRecorder, big: Seeded) -> None:
    report, read = await reads(db, recorder, lambda: analytics_report.file_analytics(
        db, big.account_id, big.busy_file))
    assert report["viewers"] == []
    assert read <= CONSTANT, f"analytics: {read} documents read"
    opened, read = await reads(db, recorder,
                               lambda: link_records.LinkRecords().open(db, big.live_token))
    assert opened.file["_id"] == big.busy_file
    assert read <= 3, f"view: {read} documents read"
    live, read = await reads(db, recorder, lambda: link_counts.file_live(db, big.busy_file))
    assert live == big.live_links
    assert read <= CONSTANT, f"file's links: {read} documents read"

"""Reads bounded by count whatever the records' arrival: the file listing reads at most twice
what it returns on an import's burst followed by a quiet spell, on an account with most of its
files deleted, and on files written before they were numbered (numbered once at start-up).

Measured on the server's side, as `tests/test_scale_reads.py` does (`tests.db_reads`): every
query the listing sends is replayed as an `explain` of what the embedded database walks for it.
The records are written in the services' shapes (`tests.scale_seed`), on a real embedded
SecantusDB with vaultd's indexes.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import FILE_NUMBER_MIGRATION, Db
from vaultd.db_indexes import number_files_once
from vaultd.services.accounts import accounts
from vaultd.services.common import numbered
from vaultd.services.files import files
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

BURST = 4_000  # files imported within half a minute, as the import did
ACCOUNT_RECORD = 1  # the listing reads the account's counters first


def _file(account_id: str, at: datetime, seq: int | None) -> dict[str, Any]:
    file_id = str(uuid.uuid4())
    doc = {"_id": file_id, "accountId": account_id, "name": f"{file_id[:8]}.pdf",
           "kind": "delivery", "contentType": "application/pdf", "size": 1000, "pageCount": 3,
           "createdAt": at, "state": "stored",
           "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}}}
    if seq is not None:
        doc["seq"] = seq
    return doc


async def _account(db: Db, name: str, times: list[datetime], *, numbered: bool = True) -> str:
    """An account a year old whose files were stored at `times` (oldest first), numbered as
    uploads number them unless `numbered` is off (written before numbers existed)."""
    account = await accounts.create_account(db, name, "business")
    docs = [_file(account.id, at, place + 1 if numbered else None)
            for place, at in enumerate(times)]
    for first in range(0, len(docs), 2000):
        await db.raw(db.files.name).insert_many(docs[first:first + 2000])
    counters: dict[str, Any] = {"createdAt": utcnow() - timedelta(days=365),
                                "usage.documents": len(docs)}
    if numbered:
        counters["fileSeq"] = len(docs)
    await db.accounts.update_one({"_id": account.id}, {"$set": counters})
    return account.id


async def _listing(db: Db, recorder: QueryRecorder, account_id: str, page: int,
                   per_page: int) -> tuple[list[str], int]:
    """The ids a listing page returns, and the documents its queries made the database read."""
    with recorder.recorded():
        listing = await files.list_files(db, account_id, page, per_page)
    return ([file["id"] for file in listing["files"]],
            await total_examined(db, list(recorder.queries)))


def _burst(count: int, ended: datetime, span: timedelta) -> list[datetime]:
    return [ended - span + span * (place / count) for place in range(count)]


async def _newest_ids(db: Db, account_id: str, count: int) -> list[str]:
    stored = await db.files.find({"accountId": account_id, "state": "stored"}).to_list()
    stored.sort(key=lambda doc: (doc["createdAt"], doc["_id"]), reverse=True)
    return [doc["_id"] for doc in stored[:count]]


async def test_the_listing_after_an_import_and_a_quiet_month_reads_twice_its_page_at_most(
        db: Db, recorder: QueryRecorder) -> None:
    now = utcnow()
    times = [now - timedelta(days=200, hours=place) for place in range(50, 0, -1)]
    times += _burst(BURST, now - timedelta(days=30), timedelta(seconds=30))
    account_id = await _account(db, "Import Co", times)
    expected = await _newest_ids(db, account_id, 100)
    for per_page in (25, 100):
        ids, read = await _listing(db, recorder, account_id, 1, per_page)
        assert ids == expected[:per_page]
        assert read <= 2 * per_page + ACCOUNT_RECORD, f"perPage {per_page}: {read} read"
    ids, read = await _listing(db, recorder, account_id, 2, 25)
    assert ids == expected[25:50]
    assert read <= 2 * 2 * 25 + ACCOUNT_RECORD, f"page 2: {read} read"


async def test_the_listing_with_most_files_deleted_reads_twice_its_page_at_most(
        db: Db, recorder: QueryRecorder) -> None:
    now = utcnow()
    account_id = await _account(db, "Sweep Co",
                                _burst(BURST, now - timedelta(hours=1), timedelta(minutes=1)))
    # Nine in ten deleted (their records gone, as a finished delete leaves them).
    gone = {"accountId": account_id, "$or": [{"seq": {"$mod": [10, place]}}
                                             for place in range(1, 10)]}
    await db.raw(db.files.name).delete_many(gone)
    left = await db.files.count_documents({"accountId": account_id})
    await db.accounts.update_one({"_id": account_id}, {"$set": {"usage.documents": left}})
    expected = await _newest_ids(db, account_id, 100)
    for per_page in (25, 100):
        ids, read = await _listing(db, recorder, account_id, 1, per_page)
        assert ids == expected[:per_page]
        assert read <= 2 * per_page + ACCOUNT_RECORD, f"perPage {per_page}: {read} read"
    # Then the newest 500 numbers as well: a gap the ranges have to widen across.
    await db.raw(db.files.name).delete_many({"accountId": account_id,
                                             "seq": {"$gt": BURST - 500}})
    left = await db.files.count_documents({"accountId": account_id})
    await db.accounts.update_one({"_id": account_id}, {"$set": {"usage.documents": left}})
    expected = await _newest_ids(db, account_id, 25)
    ids, read = await _listing(db, recorder, account_id, 1, 25)
    assert ids == expected
    # Across the gap the ranges widen eightfold while empty: the one that reaches the files
    # left may hold up to GROWTH times the page (docs/performance.md).
    assert read <= numbered.GROWTH * 25 + ACCOUNT_RECORD, f"{read} read"


async def test_files_written_before_numbers_are_numbered_once_and_listed_in_order(
        db: Db, recorder: QueryRecorder) -> None:
    now = utcnow()
    times = _burst(600, now - timedelta(days=3), timedelta(seconds=20))
    account_id = await _account(db, "Old Co", times, numbered=False)
    expected = await _newest_ids(db, account_id, 600)
    ids, _ = await _listing(db, recorder, account_id, 2, 100)
    assert ids == expected[100:200]  # listed by time while unnumbered
    await db.raw("migrations").delete_one({"_id": FILE_NUMBER_MIGRATION})
    await number_files_once(db)
    numbers = {doc["_id"]: doc["seq"] for doc in await db.files.find(
        {"accountId": account_id}, {"seq": 1}).to_list()}
    assert sorted(numbers.values()) == list(range(-599, 1))
    assert [numbers[file_id] for file_id in expected] == list(range(0, -600, -1))
    for page in (1, 6):
        ids, read = await _listing(db, recorder, account_id, page, 100)
        assert ids == expected[(page - 1) * 100:page * 100]
        assert read <= 2 * page * 100 + ACCOUNT_RECORD, f"page {page}: {read} read"
    assert await db.raw("migrations").find_one({"_id": FILE_NUMBER_MIGRATION}) is not None

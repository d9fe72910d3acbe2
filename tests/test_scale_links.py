"""A file's links (`GET /v1/files/:id/views`, the console's Links table) read at most twice
what a page returns, however many links the file has: a burst of links on a hot file, links
made through the service with some revoked, and links written before links were numbered
(numbered once at start-up).

Measured on the server's side, as `tests/test_scale_burst.py` measures the file listing
(`tests.db_reads`): every query the listing sends is replayed as an `explain` of what the
embedded database walks for it. A count and a sort with `skip` would walk every link twice.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder
from tests.link_states_helpers import listed
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.accounts.accounts import Account
from vaultd.services.links import link_numbers, links
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

BURST = 4_000  # links made on one file within half a minute
FILE_RECORD = 1  # the listing reads the file's record (its counters) first
BATCH = 2_000


async def _account_with_file(db: Db, name: str) -> tuple[Account, str]:
    account = await accounts.create_account(db, name, "business")
    file_id = str(uuid.uuid4())
    await db.raw(db.files.name).insert_one({
        "_id": file_id, "accountId": account.id, "name": "deck.pdf", "kind": "view",
        "contentType": "application/pdf", "size": 1000, "pageCount": 3,
        "createdAt": utcnow() - timedelta(days=60), "state": "stored",
        "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}},
        "linkCount": {"live": 0, "sweptAt": utcnow()}})
    return account, file_id


def _link(account_id: str, file_id: str, at: datetime, number: int | None) -> dict[str, Any]:
    doc = {"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex, "accountId": account_id,
           "fileId": file_id, "viewerEmail": "kim@example.com", "viewerName": "Kim",
           "createdAt": at, "expiresAt": at + timedelta(days=7), "revoked": False,
           "sessionsOpened": 0}
    if number is not None:
        doc["seq"] = number
    return doc


async def _seed_links(db: Db, account_id: str, file_id: str, times: list[datetime], *,
                      numbered: bool = True) -> None:
    """Links made at `times` (oldest first), numbered as `create_link` numbers them unless
    `numbered` is off (written before numbers existed)."""
    docs = [_link(account_id, file_id, at, place + 1 if numbered else None)
            for place, at in enumerate(times)]
    for first in range(0, len(docs), BATCH):
        await db.raw(db.links.name).insert_many(docs[first:first + BATCH])
    if numbered:
        await db.files.update_one({"_id": file_id},
                                  {"$set": {"linkSeq": len(docs), "linkTotal": len(docs)}})


async def _newest_ids(db: Db, file_id: str) -> list[str]:
    """The file's links, newest first, by time: what the listing must return, in order."""
    found = await db.links.find({"fileId": file_id}, {"createdAt": 1}).to_list()
    found.sort(key=lambda doc: (doc["createdAt"], doc["_id"]), reverse=True)
    return [doc["_id"] for doc in found]


def _burst(count: int, ended: datetime, span: timedelta) -> list[datetime]:
    return [ended - span + span * (place / count) for place in range(count)]


async def test_a_hot_files_links_are_read_twice_the_page_at_most(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await _account_with_file(db, "Hot File Co")
    now = utcnow()
    times = [now - timedelta(days=50, hours=place) for place in range(40, 0, -1)]
    times += _burst(BURST, now - timedelta(days=30), timedelta(seconds=30))
    await _seed_links(db, account.id, file_id, times)
    expected = await _newest_ids(db, file_id)
    for per_page in (20, 100):
        ids, total, read = await listed(db, recorder, account.id, file_id, None, 1, per_page)
        assert (ids, total) == (expected[:per_page], BURST + 40)
        assert read <= 2 * per_page + FILE_RECORD, f"perPage {per_page}: {read} read"
    ids, total, read = await listed(db, recorder, account.id, file_id, None, 3, 25)
    assert (ids, total) == (expected[50:75], BURST + 40)
    assert read <= 2 * 3 * 25 + FILE_RECORD, f"page 3: {read} read"
    last = (BURST + 40 + 99) // 100
    ids, _, _ = await listed(db, recorder, account.id, file_id, None, last, 100)
    assert ids == expected[(last - 1) * 100:]  # the oldest, the floor reached
    ids, _, _ = await listed(db, recorder, account.id, file_id, None, last + 1, 100)
    assert ids == []


async def test_links_made_and_revoked_through_the_service_are_numbered_and_listed_in_order(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await _account_with_file(db, "Service Co")
    other, _ = await _account_with_file(db, "Other Co")
    request = links.LinkRequest(file_id, "ann@example.com", "Ann", 3600)
    for _ in range(45):
        await links.create_link(db, account, request)
    made = await _newest_ids(db, file_id)
    for link_id in made[::3]:  # every third revoked: still listed, in its place
        await links.revoke_link_id(db, account.id, file_id, link_id)
    for _ in range(15):
        await links.create_link(db, account, request)
    expected = await _newest_ids(db, file_id)
    numbers = {doc["_id"]: doc["seq"] for doc in await db.links.find(
        {"fileId": file_id}, {"seq": 1}).to_list()}
    assert [numbers[link_id] for link_id in expected] == list(range(60, 0, -1))
    for page in (1, 2, 3):
        ids, total, read = await listed(db, recorder, account.id, file_id, None, page, 20)
        assert (ids, total) == (expected[(page - 1) * 20:page * 20], 60)
        assert read <= 2 * page * 20 + FILE_RECORD, f"page {page}: {read} read"
    revoked = await listed(db, recorder, account.id, file_id, "revoked", 1, 100)
    assert revoked[:2] == ([link_id for link_id in expected if link_id in made[::3]], 15)
    # Another account's create on this file is refused and takes no number from it.
    with pytest.raises(links.NotFound):
        await links.create_link(db, other, request)
    after = await db.files.find_one({"_id": file_id}, {"linkSeq": 1, "linkTotal": 1})
    assert after is not None and (after["linkSeq"], after["linkTotal"]) == (60, 60)


async def test_links_written_before_numbers_are_numbered_once_and_listed_in_order(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await _account_with_file(db, "Old Links Co")
    now = utcnow()
    await _seed_links(db, account.id, file_id,
                      _burst(600, now - timedelta(days=3), timedelta(seconds=20)),
                      numbered=False)
    expected = await _newest_ids(db, file_id)
    await db.raw("migrations").delete_one({"_id": link_numbers.LINK_NUMBER_MIGRATION})
    await link_numbers.number_links_once(db)
    numbers = {doc["_id"]: doc["seq"] for doc in await db.links.find(
        {"fileId": file_id}, {"seq": 1}).to_list()}
    assert [numbers[link_id] for link_id in expected] == list(range(0, -600, -1))
    for page in (1, 6):
        ids, total, read = await listed(db, recorder, account.id, file_id, None, page, 100)
        assert (ids, total) == (expected[(page - 1) * 100:page * 100], 600)
        assert read <= 2 * page * 100 + FILE_RECORD, f"page {page}: {read} read"
    # A link made now takes the next number above them, and is listed first.
    await links.create_link(db, account, links.LinkRequest(file_id, "bo@example.com", "Bo",
                                                           3600))
    ids, total, _ = await listed(db, recorder, account.id, file_id, None, 1, 2)
    assert total == 601 and ids[1] == expected[0]
    newest = await db.links.find_one({"_id": ids[0]}, {"seq": 1, "viewerEmail": 1})
    assert newest is not None and (newest["seq"], newest["viewerEmail"]) == (1, "bo@example.com")
    # Started again, nothing is numbered twice.
    await link_numbers.number_links_once(db)
    again = await db.files.find_one({"_id": file_id}, {"linkTotal": 1, "linkSeqFloor": 1})
    assert again is not None and (again["linkTotal"], again["linkSeqFloor"]) == (601, -599)

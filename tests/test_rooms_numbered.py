"""The rooms listing reads what it returns, whatever the account's rooms (`room_numbers`): page 1
among thousands of rooms, with most of them deleted, and rooms written before numbers existed
(numbered once at start-up, listed in the order they were); a room an older vaultd wrote is
still listed before that; a place kept for an insert not made is out of the total once a
listing reads every room, and an insert the database refuses gives its place back; `vault-admin
rooms list` reads every room by the same ranges. Against a real SecantusDB with vaultd's
indexes, through the services; what each listing makes the database read is measured on the
server's side (`tests.db_reads`).
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from pymongo.errors import OperationFailure

from tests import recorded_database
from tests.db_reads import QueryRecorder, examined, total_examined
from vaultd.db import Db
from vaultd.db_indexes import ensure_indexes
from vaultd.services.accounts import accounts
from vaultd.services.common import numbered
from vaultd.services.rooms import records, room_numbers
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

ROOMS = 2_000
ACCOUNT_RECORD = 1  # the listing reads the account's counters first
DOCUMENT_VALIDATION_FAILURE = 121  # the server's code for a document its validator refuses


def _room(account_id: str, at: datetime, seq: int | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"_id": str(uuid.uuid4()), "accountId": account_id,
                           "name": f"Room {seq}", "createdAt": at, "itemCount": 0}
    if seq is not None:
        doc["seq"] = seq
    return doc


async def _account(db: Db, name: str, times: list[datetime], *, numbered: bool = True,
                   deleted: frozenset[int] = frozenset()) -> str:
    """An account whose rooms were made at `times` (oldest first), numbered as
    `records.create_room` numbers them unless `numbered` is off (written before numbers), the
    rooms numbered in `deleted` since deleted (their records gone, their numbers gaps)."""
    account = await accounts.create_account(db, name, "business")
    docs = [_room(account.id, at, place + 1 if numbered else None)
            for place, at in enumerate(times) if place + 1 not in deleted]
    for first in range(0, len(docs), 1000):
        await db.raw(db.rooms.name).insert_many(docs[first:first + 1000])
    # A year old: rooms written before numbers are read by time back to the account's creation.
    counters: dict[str, Any] = {"roomCount": len(docs),
                                "createdAt": utcnow() - timedelta(days=365)}
    if numbered:
        counters["roomSeq"] = len(times)
    await db.accounts.update_one({"_id": account.id}, {"$set": counters})
    return account.id


async def _listing(db: Db, recorder: QueryRecorder, account_id: str, page: int,
                   per_page: int) -> tuple[list[str], int, int]:
    """The ids of a listing page, its total, and the documents its queries made the database
    read."""
    with recorder.recorded():
        listing = await records.list_rooms(db, account_id, page, per_page)
    return ([room["id"] for room in listing["rooms"]], listing["total"],
            await total_examined(db, list(recorder.queries)))


async def _newest_ids(db: Db, account_id: str) -> list[str]:
    """The account's rooms as the listing ordered them before numbers: newest `createdAt`,
    then highest `_id`, first."""
    rooms = await db.rooms.find({"accountId": account_id}).to_list()
    rooms.sort(key=lambda doc: (doc["createdAt"], doc["_id"]), reverse=True)
    return [doc["_id"] for doc in rooms]


def _times(count: int, span: timedelta) -> list[datetime]:
    start = utcnow() - span
    return [start + span * (place / count) for place in range(count)]


async def test_page_one_among_thousands_of_rooms_reads_twice_its_page_at_most(
        db: Db, recorder: QueryRecorder) -> None:
    account_id = await _account(db, "Many Rooms Co", _times(ROOMS, timedelta(minutes=2)))
    expected = await _newest_ids(db, account_id)
    for page, per_page in ((1, 25), (1, 100), (3, 25)):
        ids, total, read = await _listing(db, recorder, account_id, page, per_page)
        assert ids == expected[(page - 1) * per_page:page * per_page]
        assert total == ROOMS
        assert read <= 2 * page * per_page + ACCOUNT_RECORD, f"page {page} of {per_page}: {read}"


async def test_most_rooms_deleted_the_listing_still_reads_about_its_page(
        db: Db, recorder: QueryRecorder) -> None:
    picks = random.Random(46)
    deleted = {number for number in range(1, ROOMS + 1) if picks.random() < 0.9}
    deleted |= set(range(ROOMS - 300, ROOMS + 1))  # and the newest 300: a gap to widen across
    account_id = await _account(db, "Pruned Co", _times(ROOMS, timedelta(days=30)),
                                deleted=frozenset(deleted))
    left = ROOMS - len(deleted)
    expected = await _newest_ids(db, account_id)
    ids, total, read = await _listing(db, recorder, account_id, 1, 25)
    assert (ids, total) == (expected[:25], left)
    # The ranges widen at most GROWTH-fold while they find few: the one reaching the rooms left
    # may hold that many times the page, never the account's rooms (docs/performance.md).
    assert read <= numbered.GROWTH * 25 + ACCOUNT_RECORD, f"{read} read of {left} rooms"
    ids, _, _ = await _listing(db, recorder, account_id, 2, 25)
    assert ids == expected[25:50]


async def test_rooms_written_before_numbers_are_numbered_once_and_listed_as_they_were(
        db: Db, recorder: QueryRecorder) -> None:
    times = _times(300, timedelta(seconds=10))
    times[100:110] = [times[100]] * 10  # ten made in one millisecond: ordered by `_id`
    account_id = await _account(db, "Old Rooms Co", times, numbered=False)
    expected = await _newest_ids(db, account_id)
    ids, total, _ = await _listing(db, recorder, account_id, 2, 25)
    assert (ids, total) == (expected[25:50], 300)  # listed by time while unnumbered
    await db.raw("migrations").delete_one({"_id": room_numbers.ROOM_NUMBER_MIGRATION})
    await ensure_indexes(db)  # the start-up's steps: numbers them (`number_rooms_once`)
    by_id = {doc["_id"]: doc["seq"] for doc in await db.rooms.find(
        {"accountId": account_id}, {"seq": 1}).to_list()}
    assert [by_id[room_id] for room_id in expected] == list(range(0, -300, -1))
    for page in (1, 4):
        ids, _, read = await _listing(db, recorder, account_id, page, 50)
        assert ids == expected[(page - 1) * 50:page * 50]
        assert read <= 2 * page * 50 + ACCOUNT_RECORD, f"page {page}: {read} read"
    assert await db.raw("migrations").find_one(
        {"_id": room_numbers.ROOM_NUMBER_MIGRATION}) is not None
    # A room made now takes the account's first number, above every numbered one.
    account = await accounts.get_account(db, account_id)
    made = await records.create_room(db, account, "Made after")
    assert made["seq"] == 1
    ids, total, _ = await _listing(db, recorder, account_id, 1, 3)
    assert (ids, total) == ([made["_id"], *expected[:2]], 301)


async def test_a_room_an_older_vaultd_wrote_is_listed_until_it_is_numbered(
        db: Db, recorder: QueryRecorder) -> None:
    account_id = await _account(db, "Mixed Co", _times(40, timedelta(minutes=5)))
    older = _room(account_id, utcnow() - timedelta(days=1), None)
    await db.raw(db.rooms.name).insert_one(older)
    await db.accounts.update_one({"_id": account_id}, {"$inc": {"roomCount": 1}})
    expected = await _newest_ids(db, account_id)
    assert expected[-1] == older["_id"]
    ids, total, _ = await _listing(db, recorder, account_id, 3, 20)
    assert (ids, total) == ([older["_id"]], 41)


async def test_rooms_made_through_the_service_are_numbered_in_order_and_a_deletion_is_a_gap(
        db: Db, recorder: QueryRecorder) -> None:
    account = await accounts.create_account(db, "Made Co", "business")
    made = [await records.create_room(db, account, f"Room {n}") for n in range(5)]
    assert [room["seq"] for room in made] == [1, 2, 3, 4, 5]
    stored = await db.accounts.find_one({"_id": account.id}, {"roomSeq": 1, "roomCount": 1})
    assert stored is not None and (stored["roomSeq"], stored["roomCount"]) == (5, 5)
    await db.raw(db.rooms.name).delete_one({"_id": made[3]["_id"]})
    await db.accounts.update_one({"_id": account.id}, {"$inc": {"roomCount": -1}})
    ids, total, _ = await _listing(db, recorder, account.id, 1, 10)
    assert (ids, total) == ([made[n]["_id"] for n in (4, 2, 1, 0)], 4)


async def test_a_place_kept_for_an_insert_not_made_leaves_the_total_right_once_all_are_read(
        db: Db, recorder: QueryRecorder) -> None:
    # Three rooms made, a fourth place taken and kept for an insert that timed out and was
    # not made after all (`records.create_room` keeps it: it may have been).
    account_id = await _account(db, "Kept Place Co", _times(3, timedelta(minutes=1)))
    await db.accounts.update_one({"_id": account_id},
                                 {"$inc": {"roomCount": 1, "roomSeq": 1}})
    expected = await _newest_ids(db, account_id)
    ids, total, _ = await _listing(db, recorder, account_id, 1, 10)
    assert (ids, total) == (expected, 3)  # every room read: what was found is the total
    ids, total, _ = await _listing(db, recorder, account_id, 1, 2)
    assert (ids, total) == (expected[:2], 4)  # a page short of the end: the count


async def test_an_insert_the_database_refuses_gives_its_place_back(db: Db) -> None:
    account = await accounts.create_account(db, "Refused Co", "business")
    await records.create_room(db, account, "First")
    # The collection refuses a room of that name (a validator): nothing was made, and its place
    # under the cap is given back.
    refuse = {"collMod": db.rooms.name, "validator": {"name": {"$ne": "Refused"}},
              "validationAction": "error"}
    await db.database.command(refuse)
    try:
        with pytest.raises(OperationFailure) as refused:
            await records.create_room(db, account, "Refused")
        assert refused.value.code == DOCUMENT_VALIDATION_FAILURE
    finally:
        await db.database.command({"collMod": db.rooms.name, "validator": {}})
    stored = await db.accounts.find_one({"_id": account.id}, {"roomCount": 1, "roomSeq": 1})
    assert stored is not None and (stored["roomCount"], stored["roomSeq"]) == (1, 2)


async def test_every_room_of_an_account_is_read_in_ranges_for_vault_admin(
        db: Db, recorder: QueryRecorder) -> None:
    account_id = await _account(db, "Listed Co", _times(600, timedelta(hours=1)))
    expected = await _newest_ids(db, account_id)
    with recorder.recorded():
        listed = await records.summaries(db, account_id)
    assert [room["id"] for room in listed] == expected
    assert {room["activeLinks"] for room in listed} == {0}
    walks = [await examined(db, query) for query in list(recorder.queries)]
    # Ranges of about a page of 200 (`numbered.MAX_READ`): one `find` sorted by time walked 600.
    assert max(walks) <= 2 * numbered.MAX_READ, max(walks)

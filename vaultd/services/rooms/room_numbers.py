"""A number per room in its account, so that the rooms listing (`GET /v1/rooms`, the console's
Rooms page) reads what it returns, whatever the account's rooms.

The listing sorted the account's rooms by `createdAt` and skipped to its page: the embedded
SecantusDB reads every matching record before it sorts and limits, and `total` was a count
that read them all again (2,000 rooms: page 1 of 25 cost 55 ms, 12x a listing of 25; a plan
without a room cap has no bound). So a room takes a number in the write that already takes its
place under the plan's cap (`records.take_room_slot` raises `roomCount` and `roomSeq` in one
`find_one_and_update`), the listing reads the newest by ranges of numbers on `(accountId, seq)`
(`services.common.numbered`: a deleted room's number is a gap the ranges widen across), and
`total` is the account's `roomCount`, or what a listing that reads every room finds where that
is fewer (a place kept for an insert that may have been made and was not, or a crash between a
room's place and its insert, leaves the count one high). A crash between the number and the
insert leaves a gap, never a room without a number.

Rooms written before numbers existed are numbered once at start-up (`number_rooms_once`), from
0 down (the newest 0), below the first new one, as files are (`db_indexes.number_files_once`);
a room an older vaultd writes meanwhile is still listed, read by time after the numbered ones
(`_unnumbered`), until a restart numbers it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vaultd.db import Db
from vaultd.records import AccountDoc, RoomDoc
from vaultd.services.common import numbered
from vaultd.services.common.newest import newest
from vaultd.timefmt import utcnow

ROOM_NUMBER_MIGRATION = "roomSeq"
ACCOUNT_FIELDS = {"roomCount": 1, "roomSeq": 1, "roomSeqFloor": 1, "createdAt": 1}
SLACK = timedelta(minutes=1)  # clocks of several vaultd apart: the time windows' margin
EVERY = 2**62  # a page size no account reaches: `every_room`'s one page


async def newest_rooms(db: Db, account_id: str, page: int,
                       per_page: int) -> tuple[list[RoomDoc], int]:
    """The rooms of page `page` (newest first, `per_page` a page) and the account's total."""
    account = await db.accounts.find_one({"_id": account_id}, ACCOUNT_FIELDS)
    total = max(int(account.get("roomCount", 0)), 0) if account else 0
    wanted = min(page * per_page, total)
    if not wanted or account is None:
        return [], total
    query = {"accountId": account_id}
    docs: list[RoomDoc] = await numbered.newest_numbered(
        db.rooms, query, "seq", count=wanted, top=int(account.get("roomSeq", 0)),
        floor=int(account.get("roomSeqFloor", 1)))
    if len(docs) < wanted:
        docs += await _unnumbered(db, account, len(docs), wanted - len(docs))
    if len(docs) < wanted:
        # Every room was read, fewer than counted: a place taken for an insert that may have
        # been made and was not (`records.create_room`). What was read is the total.
        total = len(docs)
    return docs[(page - 1) * per_page:], total


async def every_room(db: Db, account_id: str) -> list[RoomDoc]:
    """Every room of the account, newest first (`vault-admin rooms list`), read by the same
    ranges of numbers as a page (no range holds more than about `numbered.MAX_READ`), where
    one `find` sorted by time was one read of them all."""
    rooms, _ = await newest_rooms(db, account_id, 1, EVERY)
    return rooms


async def _unnumbered(db: Db, account: AccountDoc, numbered: int,
                      wanted: int) -> list[RoomDoc]:
    """The newest `wanted` rooms without a number (an older vaultd's, not yet numbered at
    start-up), after the `numbered` ones, by time windows on `(accountId, createdAt)` as the
    file listing reads its unnumbered files (`services.common.newest`: no window one long
    read). The numbered rooms are newer and are read again and left out here (a filter on
    `seq` would be a field outside the index, and SecantusDB would scan the collection); this
    runs only when the numbered ones fall short of the page."""
    found = await newest(db.rooms, {"accountId": account["_id"]}, "createdAt",
                         count=numbered + wanted, latest=utcnow() + SLACK,
                         oldest=account["createdAt"] - SLACK)
    return [doc for doc in found.docs if "seq" not in doc][:wanted]


async def number_rooms_once(db: Db) -> None:
    """Rooms written before they were numbered get numbers below the first new one, the newest
    0 and older ones -1, -2... (by `createdAt`, then `_id`, as the listing ordered them), and
    the account the lowest as `roomSeqFloor`; a marker in `migrations` keeps later start-ups
    from looking again (a restore clears it). Each account's rooms are numbered by
    `numbered.number_unnumbered`, in steps that hold the database briefly."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": ROOM_NUMBER_MIGRATION}) is not None:
        return
    async for account in db.raw(db.accounts.name).find({"roomCount": {"$gt": 0}}, {"_id": 1}):
        lowest = await numbered.number_unnumbered(
            db.raw(db.rooms.name), {"accountId": account["_id"]}, "createdAt", "seq")
        if lowest is not None:
            await db.accounts.update_one({"_id": account["_id"]},
                                         {"$min": {"roomSeqFloor": lowest}})
    await marks.update_one({"_id": ROOM_NUMBER_MIGRATION}, {"$set": {"at": datetime.now(UTC)}},
                           upsert=True)

"""Active-link counts kept on write, on the account and on each file, right as links expire.

A count of live links by query reads every live link (the embedded database counts by reading
each match). Instead each account and file record carries `linkCount: {live, sweptAt}`:

- `live` is +1 when a link is created and -1 when it is revoked before it expires (the link is
  then marked `countedOut`), so it counts the links not revoked whose expiry is after `sweptAt`;
- the links that expired since `sweptAt` and were not counted out are a range on the
  `expiresAt` index, read when the count is read: the answer is `live` minus those;
- a read that found any, or one more than a day after the last sweep, moves `sweptAt` to its
  `now` and subtracts them, only if `sweptAt` is still what it read (concurrent readers in any
  process subtract once).

Room links (`services.rooms.room_links`) count on their account only, the same way: +1 when
created, -1 when revoked while live (`countedOut`), and the account's sweep reads the range of
its room links that expired too (`room_links`' (accountId, expiresAt) index).

So a read costs the links that expired since the last read, and each link leaves the count
exactly once: by its revoke while live, or by the sweep past its expiry. Records without a
`linkCount` (written before it existed) get one at start-up (`db_indexes.count_links_once`).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.timefmt import utcnow

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
SWEEP_EVERY = timedelta(days=1)  # a sweep is a write: after expiries, or daily to bound the range
# What decides whether a link is live (`links.is_live`), read with an API key's check too
# (`api_keys.check_key`): declared here, below both, so that accounts never imports links.
LIVENESS_FIELDS = {"revoked": 1, "expiresAt": 1, "exhausted": 1}


async def added(db: Db, account_id: str, file_id: str) -> None:
    """A link was created for `file_id`."""
    await _shift(db, account_id, file_id, 1)


async def revoked(db: Db, account_id: str, file_id: str, count: int) -> None:
    """`count` links of `file_id` were revoked while live (and marked `countedOut`)."""
    if count:
        await _shift(db, account_id, file_id, -count)


async def room_links_shifted(db: Db, account_id: str, by: int) -> None:
    """Room links created (+) or revoked while live and marked `countedOut` (-): the account's
    count only (a room link is no file's)."""
    if by:
        await db.accounts.update_one({"_id": account_id}, {"$inc": {"linkCount.live": by}})


async def _shift(db: Db, account_id: str, file_id: str, by: int) -> None:
    await db.accounts.update_one({"_id": account_id}, {"$inc": {"linkCount.live": by}})
    await db.files.update_one({"_id": file_id}, {"$inc": {"linkCount.live": by}})


async def account_live(db: Db, account_id: str) -> int:
    """The account's links that are neither revoked nor expired, now."""
    doc = await db.accounts.find_one({"_id": account_id}, {"linkCount": 1})
    if doc is None:
        return 0
    return await _live(db.raw(db.accounts.name), dict(doc), "accountId", db)


async def file_live(db: Db, file_id: str) -> int:
    """The file's links that are neither revoked nor expired, now."""
    doc = await db.files.find_one({"_id": file_id}, {"linkCount": 1})
    if doc is None:
        return 0
    return await _live(db.raw(db.files.name), dict(doc), "fileId", db)


async def files_live(db: Db, docs: list[dict[str, Any]]) -> dict[str, int]:
    """`file_live` of listed file records (read with their `linkCount`)."""
    raw = db.raw(db.files.name)
    counts = await asyncio.gather(*(_live(raw, doc, "fileId", db) for doc in docs))
    return {doc["_id"]: count for doc, count in zip(docs, counts, strict=True)}


async def _live(records: AsyncCollection[dict[str, Any]], doc: dict[str, Any], key: str,
                db: Db) -> int:
    counted = doc.get("linkCount") or {}
    swept: datetime | None = counted.get("sweptAt")
    if int(counted.get("live", 0)) <= 0:
        return 0  # the links expired since the sweep are among those counted: none

    # Never swept: from the start of time, once (the first read sweeps). Not the record's
    # creation: a link's expiry may be set back, by an operator or a test standing in for time.
    since = swept or NEVER
    now = utcnow()
    # The range alone is the filter (an extra field would make SecantusDB scan every link).
    ended = db.links.find({key: doc["_id"], "expiresAt": {"$gt": since, "$lte": now}},
                          {"countedOut": 1})
    expired = sum([not link.get("countedOut") async for link in ended])
    if key == "accountId":  # the account's room links expired in the same range
        room_ended = db.room_links.find(
            {"accountId": doc["_id"], "expiresAt": {"$gt": since, "$lte": now}},
            {"countedOut": 1})
        expired += sum([not link.get("countedOut") async for link in room_ended])
    if expired or now - since > SWEEP_EVERY:
        # Only if no one swept meanwhile. A missing sweptAt is asked with $exists, not None:
        # SecantusDB's index does not match None to a missing field (once per record).
        await records.update_one(
            {"_id": doc["_id"], "linkCount.sweptAt": swept or {"$exists": False}},
            {"$inc": {"linkCount.live": -expired}, "$set": {"linkCount.sweptAt": now}})
    return max(int(counted.get("live", 0)) - expired, 0)

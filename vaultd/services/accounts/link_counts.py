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

Room links (`services.rooms.room_links`) count on their account and their room
(`services.rooms.room_counts`), the same way: +1 when created, -1 when revoked while live
(`countedOut`), and the account's sweep reads the range of its room links that expired too
(`room_links`' (accountId, expiresAt) index), told by their room's record which a room's
revoke-all or deletion took.

So a read costs the links that expired since the last read, and each link leaves the count
exactly once: by its revoke while live, or by the sweep past its expiry. A file's revoke-all
(`services.accounts.link_generations`) takes the file's whole live count at once; the sweep
tells the links it took from its file's record (`link_generations.counted_out`). Records without a
`linkCount` (written before it existed) get one at start-up (`db_indexes.count_links_once`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.services.accounts import link_generations
from vaultd.services.accounts.link_generations import FILE_FIELDS, is_generation
from vaultd.timefmt import utcnow

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
SWEEP_EVERY = timedelta(days=1)  # a sweep is a write: after expiries, or daily to bound the range
# What decides whether a link is live (`links.is_live`), read with an API key's check too
# (`api_keys.check_key`): declared here, below both, so that accounts never imports links.
# `fileId` and `generation`: the link's file is joined to it (`link_generations.FILE_STAGE`).
LIVENESS_FIELDS = {"revoked": 1, "expiresAt": 1, "exhausted": 1, "fileId": 1, "generation": 1}
# What a sweep reads of an expired link.
_SWEPT_FIELDS = {"countedOut": 1, "fileId": 1, "generation": 1, "expiresAt": 1}


async def added(db: Db, account_id: str, file_id: str) -> None:
    """A link was created for `file_id`."""
    await _shift(db, account_id, file_id, 1)


async def added_in_generation(db: Db, account_id: str, file_id: str, generation: int) -> bool:
    """A link of `generation` was created for `file_id`: counted if the file is still at that
    generation (False: a revoke-all came between, the caller replaces its link and asks again)."""
    result = await db.files.update_one(
        {"_id": file_id, "linkGeneration": is_generation(generation)},
        {"$inc": {"linkCount.live": 1}})
    if not result.modified_count:
        return False
    await db.accounts.update_one({"_id": account_id}, {"$inc": {"linkCount.live": 1}})
    return True


async def revoked(db: Db, account_id: str, file_id: str, count: int) -> None:
    """`count` links of `file_id` were revoked while live (and marked `countedOut`)."""
    if count:
        await _shift(db, account_id, file_id, -count)


async def revoked_in_generation(db: Db, link: Mapping[str, Any], count: int) -> None:
    """`count` links of `link`'s file and generation were revoked while live: uncounted unless
    a revoke-all of that generation came first (it took them with the file's whole count)."""
    result = await db.files.update_one(
        {"_id": link["fileId"],
         "linkGeneration": is_generation(link_generations.generation(link, "generation"))},
        {"$inc": {"linkCount.live": -count}})
    if result.modified_count:
        await db.accounts.update_one({"_id": link["accountId"]},
                                     {"$inc": {"linkCount.live": -count}})


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
    doc = await db.files.find_one({"_id": file_id}, {"linkCount": 1, **FILE_FIELDS})
    if doc is None:
        return 0
    return await _live(db.raw(db.files.name), dict(doc), "fileId", db)


async def files_live(db: Db, docs: list[dict[str, Any]]) -> dict[str, int]:
    """`file_live` of listed file records (read with their `linkCount` and `FILE_FIELDS`)."""
    raw = db.raw(db.files.name)
    counts = await asyncio.gather(*(_live(raw, doc, "fileId", db) for doc in docs))
    return {doc["_id"]: count for doc, count in zip(docs, counts, strict=True)}


async def file_live_unswept(db: Db, doc: dict[str, Any], now: datetime) -> int:
    """`file_live` of a file record read with its `linkCount` and `FILE_FIELDS`, at `now`, not
    written back: for a writer that sets the count itself (a revoke-all sets it to 0)."""
    return await _live(db.raw(db.files.name), doc, "fileId", db, now, sweep=False)


async def _live(records: AsyncCollection[dict[str, Any]], doc: dict[str, Any], key: str,
                db: Db, now: datetime | None = None, *, sweep: bool = True) -> int:
    counted = doc.get("linkCount") or {}
    swept: datetime | None = counted.get("sweptAt")
    if int(counted.get("live", 0)) <= 0:
        return 0  # the links expired since the sweep are among those counted: none

    # Never swept: from the start of time, once (the first read sweeps). Not the record's
    # creation: a link's expiry may be set back, by an operator or a test standing in for time.
    since = swept or NEVER
    now = now or utcnow()
    # The range alone is the filter (an extra field would make SecantusDB scan every link).
    ended = db.links.find({key: doc["_id"], "expiresAt": {"$gt": since, "$lte": now}},
                          _SWEPT_FIELDS)
    expired = await _not_counted_out(db, [dict(link) async for link in ended],
                                     doc if key == "fileId" else None)
    if key == "accountId":  # the account's room links expired in the same range
        room_ended = db.room_links.find(
            {"accountId": doc["_id"], "expiresAt": {"$gt": since, "$lte": now}},
            {"countedOut": 1, "roomId": 1, "generation": 1, "expiresAt": 1})
        expired += await _room_links_not_counted_out(db, [dict(link) async for link in
                                                          room_ended])
    if sweep and (expired or now - since > SWEEP_EVERY):
        # Only if no one swept meanwhile. A missing sweptAt is asked with $exists, not None:
        # SecantusDB's index does not match None to a missing field (once per record).
        await records.update_one(
            {"_id": doc["_id"], "linkCount.sweptAt": swept or {"$exists": False}},
            {"$inc": {"linkCount.live": -expired}, "$set": {"linkCount.sweptAt": now}})
    return max(int(counted.get("live", 0)) - expired, 0)


async def _not_counted_out(db: Db, links: list[dict[str, Any]], file: dict[str, Any] | None
                           ) -> int:
    """How many of these expired links are still in the counts. Their files' generations are
    read once, and only for links that may be of a revoked one (`link_generations`)."""
    links = [link for link in links if not link.get("countedOut")]
    if file is not None:
        files = {file["_id"]: file}
    elif links:
        found = db.files.find({"_id": {"$in": sorted({link["fileId"] for link in links})}},
                              FILE_FIELDS)
        files = {doc["_id"]: dict(doc) async for doc in found}
    else:
        files = {}
    return sum(not link_generations.counted_out(link, files.get(link["fileId"]))
               for link in links)


async def _room_links_not_counted_out(db: Db, links: list[dict[str, Any]]) -> int:
    """As `_not_counted_out`, for room links: a room's revoke-all or deletion takes its whole
    count as a file's does (`services.rooms.room_counts`), read from the room records."""
    links = [link for link in links if not link.get("countedOut")]
    rooms: dict[str, dict[str, Any]] = {}
    if links:
        found = db.rooms.find({"_id": {"$in": sorted({link["roomId"] for link in links})}},
                              FILE_FIELDS)
        rooms = {doc["_id"]: dict(doc) async for doc in found}
    return sum(not link_generations.counted_out(link, rooms.get(link["roomId"]))
               for link in links)

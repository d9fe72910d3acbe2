"""A room's live links, counted on write, and its link generation: revoking all of a room's links,
or deleting the room, is one write whatever their number.

The room record carries what a file's does (`services.accounts.link_counts`,
`link_generations`), under the same field names, so the same functions read both:

- `linkCount: {live, sweptAt}`: +1 when a link is created, -1 when one is revoked while live;
  the links that expired since `sweptAt` are a range on `room_links`' (roomId, expiresAt) index,
  read when the count is read (per shard when a probe finds many: `link_shards.read_probed`).
  The account keeps its own count of them as before.
- `linkGeneration` (absent: 0) and each link's `generation` (its room's when it was counted):
  a revoke-all (`room_revokes`) raises the room's, and every link of an older one is revoked
  from that write on. `linkRevokes.<generation>.at` says which left the counts with it until the
  background steps (`links.revoke_jobs`, kind `room`) have written it on the links.
- `state: deleting` and `deletingAt`: a deletion's claim (`room_deletions`); no link of the
  room is live from then on, and those live then left the counts with it.

So whoever reads a room link's liveness joins its room in the same command (`ROOM_STAGE`, an
equality `$lookup` on the room's `_id`) and folds it (`link_generations.fold`), as a file
link's read joins its file.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from vaultd.db import Db
from vaultd.records import RoomLinkDoc
from vaultd.services.accounts import link_generations, link_shards
from vaultd.services.accounts.link_counts import NEVER, SWEEP_EVERY
from vaultd.services.accounts.link_generations import FILE_FIELDS, JOINED, is_generation
from vaultd.timefmt import utcnow

ROOM_STAGE: dict[str, Any] = {
    "$lookup": {"from": "rooms", "localField": "roomId", "foreignField": "_id", "as": JOINED,
                "pipeline": [{"$project": {**FILE_FIELDS, "_id": 0}}]}}
# What a count read takes of the room record.
COUNT_FIELDS = {"linkCount": 1, **FILE_FIELDS}
_SWEPT_FIELDS = {"countedOut": 1, "generation": 1, "expiresAt": 1}
ROOM_LINK_COUNT_MIGRATION = "room-link-counts"


async def read_link(db: Db, match: dict[str, Any]) -> RoomLinkDoc | None:
    """The room link matching `match` (by its hash or `_id`), its `revoked` as its room's
    generation and state say: one `aggregate`, where a `find_one` was."""
    pipeline = [{"$match": match}, ROOM_STAGE]
    async for doc in await db.raw(db.room_links.name).aggregate(pipeline):
        return cast("RoomLinkDoc", link_generations.fold(doc))
    return None


async def added(db: Db, room_id: str, generation: int) -> bool:
    """A link of `generation` was created in the room: counted if the room is still at that
    generation (False: a revoke-all or a deletion came between; the caller replaces its link)."""
    result = await db.rooms.update_one(
        {"_id": room_id, "linkGeneration": is_generation(generation)},
        {"$inc": {"linkCount.live": 1}})
    return bool(result.modified_count)


async def revoked(db: Db, link: RoomLinkDoc) -> bool:
    """`link`, live, was revoked by itself: uncounted from its room unless a revoke-all or a
    deletion of its generation came first (it took the room's whole count). Whether it was."""
    result = await db.rooms.update_one(
        {"_id": link["roomId"],
         "linkGeneration": is_generation(link_generations.generation(link, "generation"))},
        {"$inc": {"linkCount.live": -1}})
    return bool(result.modified_count)


async def live(db: Db, room_id: str) -> int:
    """The room's links that are neither revoked nor expired, now (swept as a file's count)."""
    doc = await db.rooms.find_one({"_id": room_id}, COUNT_FIELDS)
    return 0 if doc is None else await _live(db, dict(doc), utcnow(), sweep=True)


async def live_unswept(db: Db, room: dict[str, Any], now: datetime) -> int:
    """`live` of a room record read with COUNT_FIELDS, at `now`, not written back: for a
    writer that sets the count itself (a revoke-all sets it to 0, a deletion takes it)."""
    return await _live(db, room, now, sweep=False)


async def _live(db: Db, room: dict[str, Any], now: datetime, *, sweep: bool) -> int:
    counted = room.get("linkCount") or {}
    swept: datetime | None = counted.get("sweptAt")
    if int(counted.get("live", 0)) <= 0:
        return 0
    since = swept or NEVER
    # The range alone is the filter (an extra field would make SecantusDB scan every link);
    # per shard if a probe of one finds many (links made together expire together).
    ended = await link_shards.read_probed(
        db.raw(db.room_links.name),
        {"roomId": room["_id"], "expiresAt": {"$gt": since, "$lte": now}}, _SWEPT_FIELDS)
    expired = sum(not link_generations.counted_out(link, room) for link in ended)
    if sweep and (expired or now - since > SWEEP_EVERY):
        await db.rooms.update_one(
            {"_id": room["_id"], "linkCount.sweptAt": swept or {"$exists": False}},
            {"$inc": {"linkCount.live": -expired}, "$set": {"linkCount.sweptAt": now}})
    return max(int(counted.get("live", 0)) - expired, 0)


async def count_room_links_once(db: Db) -> None:
    """Rooms written before their links were counted on them get their count, once (a marker
    in `migrations` keeps later start-ups from looking again)."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": ROOM_LINK_COUNT_MIGRATION}) is not None:
        return
    rooms = db.raw(db.rooms.name)
    async for doc in rooms.find({"linkCount": {"$exists": False}}, {"_id": 1}):
        now = utcnow()
        count = await db.room_links.count_documents(
            {"roomId": doc["_id"], "revoked": False, "expiresAt": {"$gt": now}})
        await rooms.update_one({"_id": doc["_id"], "linkCount": {"$exists": False}},
                               {"$set": {"linkCount": {"live": count, "sweptAt": now}}})
    await marks.update_one({"_id": ROOM_LINK_COUNT_MIGRATION}, {"$set": {"at": utcnow()}},
                           upsert=True)

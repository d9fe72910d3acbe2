"""`DELETE /v1/rooms/:id` in one bounded write, whatever the number of the room's links and items.

The call, as a file's deletion (`services.files.deletions`):

1. reads the room's live links as a count read does (`room_counts.live_unswept`): what the
   deletion takes from the account's count;
2. claims the room in one conditional update, only if it is as read (no deletion yet, same
   generation, same count, same sweep; else a link was created or revoked in between: read
   again). The update sets `state: deleting` (every liveness read of a room link joins its room:
   no page of its links is served from this write on, in any process), notes the count and the
   time (`liveLinksAtDelete`, `deletingAt`: `link_generations.counted_out` reads them), names its
   owner (`deleteOwner`, an instance id), raises the room's link generation (a link being created
   meanwhile is never counted: `room_counts.added`) and moves `accountId` to `deletedFrom`, so the
   room leaves its account's listing, its reads and its plan's count at once, on the listing's
   own index;
3. settles what a caller sees (`settle`): the account's room place and live links are given
   back, once (the account's `pendingRoomDeletes` marker). Then it answers 204.

What grows with the room goes afterwards, in the background (`clean_up`), in short steps that
rest as long as each took: the account's expiry sweep past the claim, the room's links and its
items in closed `_id` windows, DELETE_BATCH per delete, then the record and the marker. If the
owner dies first, recovery (`resume_orphaned`) claims the room for itself and does it again from
the start: every step is idempotent. The files of a room are never touched; the `link_stats` of
its links stay (a file's own analytics count a room's reads of it), as before.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from pymongo import ReturnDocument

from vaultd.db import Db
from vaultd.errors import ServiceUnavailable
from vaultd.services.accounts import link_generations
from vaultd.services.accounts.link_generations import is_generation
from vaultd.services.common import background
from vaultd.services.files.deletions import delete_resting, sweep_account
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.rooms import room_counts
from vaultd.services.rooms.records import get_room
from vaultd.timefmt import utcnow

# Claims tried before giving up: each retry means a link of the room was created or revoked
# between the count's read and the claim.
ATTEMPTS = 8
BUSY = "the room's links are changing too fast to delete it; retry"
PENDING = "pendingRoomDeletes"  # the account's marker: its counts were given back for these

# The rooms this process is cleaning up: one whose clean-up stopped here (a database error) is
# taken over by this process's own next recovery, as a dead owner's would be.
_cleaning: set[str] = set()


async def delete_room(db: Db, account_id: str, room_id: str, owner: str) -> dict[str, Any]:
    """Claim the room and settle its deletion; its links, items and record are removed
    afterwards in the background (`clean_up`), by `owner` or by recovery. Returns the room as
    claimed."""
    require_caller(Permission.CHANGE_CONTENT)
    for _ in range(ATTEMPTS):
        room = dict(await get_room(db, account_id, room_id))  # with its count and generation
        now = utcnow()
        live = await room_counts.live_unswept(db, room, now)
        claimed = await _claim(db, room, live, now, owner)
        if claimed is not None:
            _cleaning.add(claimed["_id"])
            await _settle_then_clean_up(db, claimed)
            return claimed
        await asyncio.sleep(0)
    raise ServiceUnavailable(BUSY)


async def _claim(db: Db, room: dict[str, Any], live: int, now: datetime,
                 owner: str) -> dict[str, Any] | None:
    """The one write that deletes: only if the room is as read, else None."""
    counted = room.get("linkCount")
    query: dict[str, Any] = {
        "_id": room["_id"], "accountId": room["accountId"], "state": {"$exists": False},
        "linkGeneration": is_generation(link_generations.generation(room))}
    if counted is None:  # no link was ever counted: a link counted since adds the field
        query["linkCount"] = {"$exists": False}
    else:
        swept = counted.get("sweptAt")
        query["linkCount.live"] = int(counted.get("live", 0))
        query["linkCount.sweptAt"] = swept if swept is not None else {"$exists": False}
    claimed: dict[str, Any] | None = await db.raw(db.rooms.name).find_one_and_update(
        query,
        {"$set": {"state": "deleting", "liveLinksAtDelete": live, "deletingAt": now,
                  "deleteOwner": owner, "deletedFrom": room["accountId"],
                  "linkGeneration": link_generations.generation(room) + 1},
         "$unset": {"accountId": ""}},
        return_document=ReturnDocument.AFTER)
    return claimed


async def settle(db: Db, room: dict[str, Any]) -> None:
    """What the deletion's answer stands for: the account's room place (its plan's cap) and
    the room's live links given back, once however often it is called."""
    await db.accounts.update_one(
        {"_id": room["deletedFrom"], PENDING: {"$ne": room["_id"]}},
        {"$inc": {"roomCount": -1, "linkCount.live": -int(room["liveLinksAtDelete"])},
         "$push": {PENDING: room["_id"]}})


async def _settle_then_clean_up(db: Db, room: dict[str, Any]) -> None:
    await background.settle_then_clean_up(room["_id"], _cleaning, settle(db, room),
                                          lambda: clean_up(db, room), "cleaning up a deleted room")


async def clean_up(db: Db, room: dict[str, Any]) -> None:
    """Everything of a settled deletion that grows with the room, in short steps; the record
    goes before the account's marker (a crash between leaves a marker naming no room: the
    counts are never given back twice)."""
    room_id, account_id = room["_id"], room["deletedFrom"]
    # Its links that expired before the claim leave the account's count by a sweep that reads
    # them: past the claim before they go.
    await sweep_account(db, account_id, room_id, room.get("deletingAt"),
                        links=db.room_links.name, key="roomId")
    links = db.raw(db.room_links.name)
    # By `_id` windows on (roomId, revoked, _id); the last call finds a link of another shape.
    for revoked in (False, True):
        await delete_resting(links, {"roomId": room_id, "revoked": revoked})
    await delete_resting(links, {"roomId": room_id}, windows=False)
    await delete_resting(db.raw(db.room_items.name), {"roomId": room_id})  # (roomId, _id)
    await db.rooms.delete_one({"_id": room_id})
    await db.accounts.update_one({"_id": account_id}, {"$pull": {PENDING: room_id}})


async def resume_orphaned(db: Db, live_instances: set[str], owner: str) -> int:
    """Take over the deletions whose owner is gone, or is this process (`owner`) and no longer
    cleaning it up; returns how many this call took. Each is claimed first (its `deleteOwner`
    replaced by `owner` in one conditional update), so processes recovering at once never
    resume the same one twice. Settled before this returns; the clean-up goes on in the
    background."""
    resumed = 0
    deleting = db.raw(db.rooms.name).find({"state": "deleting"}, {"deleteOwner": 1})
    for doc in [doc async for doc in deleting]:
        previous = doc.get("deleteOwner")
        if doc["_id"] in _cleaning or (previous in live_instances and previous != owner):
            continue
        _cleaning.add(doc["_id"])  # before the claim: a concurrent recovery here skips it
        claimed: dict[str, Any] | None = await db.raw(db.rooms.name).find_one_and_update(
            {"_id": doc["_id"], "state": "deleting", "deleteOwner": previous},
            {"$set": {"deleteOwner": owner}}, return_document=ReturnDocument.AFTER)
        if claimed is None:
            _cleaning.discard(doc["_id"])
            continue
        await _settle_then_clean_up(db, claimed)
        resumed += 1
    return resumed

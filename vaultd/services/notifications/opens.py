"""A member's link opened for the first time: noted for their digest, and marked for a mail
when they asked for one (`prefs.firstOpen`; the mail itself is `open_mails`, coalesced).

The page path's analytics (`analytics.engagement`) call `first_opened` when a link's first open
is recorded; a room's opening (`rooms.activity`) calls `room_first_opened`. That record
(`link_stats`, or the room link) is written with `alertOwed` set, in the same write as the open
itself, whenever the link has a member (`createdBy`: `owners`); the note clears it. So a
process that dies in between leaves the flag, and any process's sweep (`sweep_owed`) finishes
the work: nothing is lost, and nothing is noted twice (the note's id is the link's)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.records import FileDoc, LinkDoc, RoomLinkDoc
from vaultd.records.notifications import LinkOpenNoteDoc
from vaultd.services.notifications import prefs
from vaultd.timefmt import utcnow

KEEP = timedelta(days=2)  # notes outlive the digest's day by one, for a late digest
OWED_AFTER = timedelta(seconds=30)  # a flag this old was left by a process that stopped


def printable(text: str, limit: int) -> str:
    """One line of `text` for a mail: control characters out (a header cannot carry a line
    break), shortened with an ellipsis."""
    line = " ".join("".join(ch for ch in text if ch.isprintable()).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


async def first_opened(db: Db, link: LinkDoc, file: FileDoc | None, at: datetime) -> None:
    """Note the open for the link's member; then the `alertOwed` flag goes. Safe to call again
    for the same link."""
    member_id = link.get("createdBy")
    if member_id is not None:
        await _note(db, link["_id"], link["accountId"], member_id, at,
                    file["name"] if file else "a deleted file", link)
    await db.link_stats.update_one({"_id": link["_id"]}, {"$unset": {"alertOwed": ""}})


async def room_first_opened(db: Db, link: RoomLinkDoc, room_name: str, at: datetime) -> None:
    member_id = link.get("createdBy")
    if member_id is not None:
        await _note(db, link["_id"], link["accountId"], member_id, at, f"the room {room_name}",
                    link)
    await db.room_links.update_one({"_id": link["_id"]}, {"$unset": {"alertOwed": ""}})


async def _note(db: Db, link_id: str, account_id: str, member_id: str, at: datetime,
                what: str, link: LinkDoc | RoomLinkDoc) -> None:
    note: LinkOpenNoteDoc = {
        "_id": link_id, "accountId": account_id, "memberId": member_id, "at": at,
        "fileName": printable(what, 200), "viewerEmail": link["viewerEmail"],
        "viewerName": printable(link["viewerName"], 200)}
    if await prefs.wants_open_mail(db, member_id):
        note["mailOwed"] = True
    with contextlib.suppress(DuplicateKeyError):  # noted before (a sweep after a crash)
        await db.notification_opens.insert_one(note)


async def sweep_owed(db: Db) -> int:
    """Finish the first opens a stopped process left owed. Returns how many."""
    cutoff = utcnow() - OWED_AFTER
    done = 0
    async for stats in db.link_stats.find({"alertOwed": True}, {"firstOpenedAt": 1}):
        if stats["firstOpenedAt"] >= cutoff:
            continue  # its own process is probably still at it
        link = await db.links.find_one({"_id": stats["_id"]})
        if link is None:
            await db.link_stats.update_one({"_id": stats["_id"]}, {"$unset": {"alertOwed": ""}})
            continue
        file = await db.files.find_one({"_id": link["fileId"]}, {"name": 1})
        await first_opened(db, link, file, stats["firstOpenedAt"])
        done += 1
    async for room_link in db.room_links.find({"alertOwed": True}):
        if room_link["firstOpenedAt"] >= cutoff:
            continue
        room = await db.rooms.find_one({"_id": room_link["roomId"]}, {"name": 1})
        await room_first_opened(db, room_link, room["name"] if room else "(deleted)",
                                room_link["firstOpenedAt"])
        done += 1
    return done

"""What a room's owner learns: its access log, its analytics and its webhooks.

A room link's pages are counted per (link, document) in `link_stats` under the id
`<room link id>:<file id>` (`reads.page_link`), by the page path's engagement hook like any
page, each record carrying its `roomId`; a room's analytics add the room's records up, read by
that field's index. Its entries carry `roomId`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vaultd.db import Db
from vaultd.records import AccessLogDoc, RoomLinkDoc
from vaultd.services.common import access_log, id_ranges, numbered_log, outbox
from vaultd.services.common.feed import EPOCH
from vaultd.services.common.newest import newest
from vaultd.services.notifications import opens
from vaultd.timefmt import iso_utc, utcnow

# What a room's log holds: its openings, its pages, and its links' gates (services.gates).
ROOM_ACTIONS = ("page", "room.view", "verify", "agreement")
# What the room's analytics add up of each `link_stats` record.
STATS_FIELDS = {"viewerEmail": 1, "viewerName": 1, "fileId": 1, "pages": 1, "totalSeconds": 1,
                "lastSeenAt": 1}
ROOM_STATS_MIGRATION = "room-link-stats"


def _link_data(link: RoomLinkDoc) -> dict[str, Any]:
    return {"roomLinkId": link["_id"], "viewerEmail": link["viewerEmail"],
            "viewerName": link["viewerName"], "expiresAt": iso_utc(link["expiresAt"])}


async def room_opened(db: Db, link: RoomLinkDoc, room_name: str, ip: str | None) -> None:
    """The `room.view` entry of an opening; the link's first opening sends `room.opened`."""
    await access_log.record(db, link["accountId"], None, "room.view",
                            viewer_email=link["viewerEmail"], ip=ip, room_id=link["roomId"])
    unopened = {"_id": link["_id"], "firstOpenedAt": {"$exists": False}}
    now = utcnow()
    # The member's note is owed in the same write as the opening (notifications.opens).
    opening: dict[str, Any] = {"firstOpenedAt": now}
    if "createdBy" in link:
        opening["alertOwed"] = True
    first = await db.room_links.update_one(unopened, {"$set": opening})
    if first.modified_count:
        data = {"roomId": link["roomId"], "roomName": room_name, **_link_data(link), "ip": ip}
        await outbox.emit(db, link["accountId"], "room.opened", data,
                          key=f"room.opened:{link['_id']}")
        await opens.room_first_opened(db, link, room_name, now)


async def room_revoked(db: Db, account_id: str, room_id: str, count: int,
                       link: RoomLinkDoc | None) -> None:
    """`room.revoked`: one link (with its viewer) or all of a room's (`revoked`: how many)."""
    data: dict[str, Any] = {"roomId": room_id, "revoked": count}
    if link is not None:
        data.update(_link_data(link))
    await outbox.emit(db, account_id, "room.revoked", data)


async def room_links_revoking(db: Db, account_id: str, room_id: str, count: int, batch: str,
                              generation: int) -> list[str]:
    """A room's revoke-all: its `room.revoked` (`revoked`: how many), held until the room's link
    `generation` is raised by the job `batch` (`links.revoke_jobs`), as a file's is."""
    raised = outbox.Awaited("rooms", {"_id": room_id, f"linkRevokes.{generation}.batch": batch})
    return await outbox.emit(db, account_id, "room.revoked", {"roomId": room_id, "revoked": count},
                             awaits=raised, key=f"room.revoked:batch:{batch}")


def entry_json(doc: AccessLogDoc) -> dict[str, Any]:
    """As every entry (`access_log.entry_json`): a room.view entry is about the room, so it
    has `roomId` and no `fileId`; a page entry has both."""
    return access_log.entry_json(doc)


async def latest_entries(db: Db, room_id: str, *, before: datetime | None = None,
                         action: str | None = None,
                         since: datetime | None = None) -> list[dict[str, Any]]:
    """The room's latest LATEST entries, newest first (ties at the last `at` kept, as in
    `access_log.latest_for_file`). Read by time windows on (roomId[, action], at)
    (`services.common.newest`), back to `since` (the room's creation), so a page costs what it
    returns, not the room's whole log; the log (whole or of one `action`) by the entries'
    numbers in the room where they have them (`common.numbered_log`), so a burst behind the
    page is not walked either."""
    query: dict[str, Any] = {"roomId": room_id}
    limit = access_log.LATEST
    oldest = (since or EPOCH) - access_log.UPLOAD_SLACK
    numbered = await numbered_log.newest_entries(
        db, numbered_log.ROOM, room_id, count=limit, oldest=oldest,
        below=(before, "") if before is not None else None, action=action)
    if action is not None:
        query["action"] = action
    if numbered is not None:
        log = db.raw(db.access_log.name)
        return [entry_json(doc) for doc in
                await numbered_log.with_ties(log, query, numbered, limit)]
    page = await newest(db.access_log, query, "at", count=limit, before=before,
                        oldest=oldest,
                        latest=before or utcnow() + access_log.UPLOAD_SLACK)
    docs = page.docs
    if page.following is not None and page.following["at"] == docs[-1]["at"]:
        last = docs[-1]
        # One millisecond's entries, on the index; the `_id` bound is applied here (a filter
        # field outside the index would make SecantusDB scan the whole log).
        tied = db.access_log.find({**query, "at": last["at"]}).sort("_id", -1)
        docs += [doc async for doc in tied if doc["_id"] < last["_id"]][:limit]
    return [entry_json(doc) for doc in docs]


async def analytics(db: Db, room_id: str, file_names: dict[str, str]) -> dict[str, Any]:
    """Per viewer: documents opened, pages viewed, seconds, last seen; per document: viewers
    and seconds. From the room's `link_stats` records, read by their `roomId` (one per link
    and document opened): what the answer adds up, never the room's links nor their unopened
    documents."""
    viewers: dict[str, dict[str, Any]] = {}
    documents: dict[str, dict[str, Any]] = {}
    async for stats in db.raw(db.link_stats.name).find({"roomId": room_id}, STATS_FIELDS):
        email = stats["viewerEmail"]
        pages = sum(int(page.get("views", 0)) for page in stats.get("pages", {}).values())
        seconds = float(stats.get("totalSeconds", 0.0))
        viewer = viewers.setdefault(email, {
            "viewerEmail": email, "viewerName": stats["viewerName"],
            "documentsOpened": 0, "pagesViewed": 0, "seconds": 0.0, "lastSeenAt": None})
        viewer["documentsOpened"] += 1
        viewer["pagesViewed"] += pages
        viewer["seconds"] = round(viewer["seconds"] + seconds, 3)
        seen = iso_utc(stats["lastSeenAt"])
        viewer["lastSeenAt"] = max(filter(None, [viewer["lastSeenAt"], seen]))
        document = documents.setdefault(stats["fileId"], {
            "fileId": stats["fileId"], "name": file_names.get(stats["fileId"]),
            "viewers": set(), "seconds": 0.0})
        document["viewers"].add(email)
        document["seconds"] = round(document["seconds"] + seconds, 3)
    return {"roomId": room_id, "viewers": sorted(viewers.values(),
                                                 key=lambda v: v["viewerEmail"]),
            "documents": [{**doc, "viewers": len(doc["viewers"])}
                          for doc in sorted(documents.values(), key=lambda d: d["fileId"])]}


async def tag_room_stats_once(db: Db) -> None:
    """The `link_stats` records of room links written before they carried their `roomId` get
    it, once (a marker in `migrations`): each room link's records are the `_id` range
    `<link id>:...` on the (_id, totalSeconds) index, written in one update per link."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": ROOM_STATS_MIGRATION}) is not None:
        return
    stats = db.raw(db.link_stats.name)
    async for links in id_ranges.batches(db.raw(db.room_links.name), {"roomId": 1}):
        for link in links:
            await stats.update_many({"_id": {"$gt": f"{link['_id']}:", "$lt": f"{link['_id']};"}},
                                    {"$set": {"roomId": link["roomId"]}})
    await marks.update_one({"_id": ROOM_STATS_MIGRATION}, {"$set": {"at": utcnow()}},
                           upsert=True)

"""The events vaultd publishes, each built from the record it announces and queued in the outbox.

An event whose record is written by one insert or conditional update is queued `held` before
that write and released after it (`outbox.release`); see `services.common.outbox`. `view.opened` and
`view.completed` are facts in a `link_stats` document that also carries whether they were
announced: `announce_missed` queues the ones a crash left unannounced.

`data` carries what the owner needs to act (ids, file name, viewer email and name, ip, page
count) and never a view token, an API key or document content. `viewId` is the link's internal
id, not its token.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TypedDict

from vaultd.db import Db
from vaultd.records import FileDoc, LinkDoc
from vaultd.services.common import access_log, outbox
from vaultd.services.common.outbox import Awaited
from vaultd.timefmt import iso_utc, utcnow

Held = list[str]  # ids of held messages, to release once the record is written


class EventData(TypedDict, total=False):
    """An event's `data`: the file part always, the link part for `view.*`, then per type."""

    viewId: str
    fileId: str
    fileName: str | None
    pageCount: int
    viewerEmail: str | None
    viewerName: str
    expiresAt: str
    ip: str | None  # view.opened
    kind: str  # file.uploaded
    contentType: str
    size: int
    revoked: int  # view.revoked by revoke-views: how many links


def _file_data(file_id: str, file: FileDoc | None) -> EventData:
    return {"fileId": file_id, "fileName": file["name"] if file else None,
            "pageCount": int(file["pageCount"]) if file else 0}


def _link_data(link: LinkDoc, file: FileDoc | None) -> EventData:
    data: EventData = {"viewId": link["_id"], "viewerEmail": link["viewerEmail"],
                       "viewerName": link["viewerName"], "expiresAt": iso_utc(link["expiresAt"])}
    return {**_file_data(link["fileId"], file), **data}


async def file_uploaded(db: Db, file: FileDoc) -> Held:
    """Held until the file document is inserted."""
    data: EventData = {**_file_data(file["_id"], file), "kind": file["kind"],
                       "contentType": file["contentType"], "size": int(file["size"])}
    return await outbox.emit(db, file["accountId"], "file.uploaded", data,
                             awaits=Awaited("files", {"_id": file["_id"]}))


async def file_deleted(db: Db, file: FileDoc) -> None:
    """Queued before the file document goes; a deletion resumed by recovery queues it again
    under the same ids (a no-op)."""
    await outbox.emit(db, file["accountId"], "file.deleted", _file_data(file["_id"], file),
                      key=f"file.deleted:{file['_id']}")


async def record_download(db: Db, file: FileDoc, viewer_email: str | None) -> None:
    """The download's access-log entry, with `file.downloaded` held until it is written."""
    entry_id = str(uuid.uuid4())
    data: EventData = {**_file_data(file["_id"], file), "viewerEmail": viewer_email}
    held = await outbox.emit(db, file["accountId"], "file.downloaded", data,
                             awaits=Awaited("access_log", {"_id": entry_id}))
    await access_log.record(db, file["accountId"], file["_id"], "download",
                            viewer_email=viewer_email, entry_id=entry_id)
    await outbox.release(db, held)


async def view_created(db: Db, link: LinkDoc, file: FileDoc) -> Held:
    """Held until the link is inserted."""
    return await outbox.emit(db, link["accountId"], "view.created", _link_data(link, file),
                             awaits=Awaited("links", {"_id": link["_id"]}))


async def view_revoked(db: Db, link: LinkDoc) -> Held:
    """Held until the link is revoked; one message per link however many callers race."""
    file = await db.files.find_one({"_id": link["fileId"]})
    return await outbox.emit(db, link["accountId"], "view.revoked", _link_data(link, file),
                             awaits=Awaited("links", {"_id": link["_id"], "revoked": True}),
                             key=f"view.revoked:{link['_id']}")


async def file_links_revoking(db: Db, account_id: str, file_id: str, count: int,
                              batch: str, generation: int) -> Held:
    """`POST /files/:id/revoke-views`: one event for the file, with how many links it disables;
    held until the file's link `generation` is raised by the job `batch`
    (`links.revoke_jobs`)."""
    file = await db.files.find_one({"_id": file_id})
    data: EventData = {**_file_data(file_id, file), "revoked": count}
    raised = Awaited("files", {"_id": file_id, f"linkRevokes.{generation}.batch": batch})
    return await outbox.emit(db, account_id, "view.revoked", data, awaits=raised,
                             key=f"view.revoked:batch:{batch}")


async def view_opened(db: Db, link: LinkDoc, file: FileDoc | None, ip: str | None) -> None:
    data: EventData = {**_link_data(link, file), "ip": ip}
    await outbox.emit(db, link["accountId"], "view.opened", data,
                      key=f"view.opened:{link['_id']}")
    await db.link_stats.update_one({"_id": link["_id"]}, {"$set": {"openAnnounced": True}})


async def view_completed(db: Db, link: LinkDoc, file: FileDoc | None) -> None:
    await outbox.emit(db, link["accountId"], "view.completed", _link_data(link, file),
                      key=f"view.completed:{link['_id']}")
    await db.link_stats.update_one({"_id": link["_id"]}, {"$set": {"completeAnnounced": True}})


async def announce_missed(db: Db, older_than_seconds: float) -> int:
    """Queue the opens and completions recorded more than `older_than_seconds` ago whose
    announcement a crash interrupted (same message ids as the interrupted one)."""
    cutoff = utcnow() - timedelta(seconds=older_than_seconds)
    queued = 0
    async for stats in db.link_stats.find({"openAnnounced": False,
                                           "firstOpenedAt": {"$lt": cutoff}}):
        link = await db.links.find_one({"_id": stats["_id"]})
        if link is not None:
            file = await db.files.find_one({"_id": link["fileId"]})
            await view_opened(db, link, file, stats.get("openIp"))
            queued += 1
    async for stats in db.link_stats.find({"completeAnnounced": False,
                                           "completedAt": {"$lt": cutoff}}):
        link = await db.links.find_one({"_id": stats["_id"]})
        if link is not None:
            await view_completed(db, link, await db.files.find_one({"_id": link["fileId"]}))
            queued += 1
    return queued

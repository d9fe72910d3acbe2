"""The events vaultd publishes, each built from the record it follows and queued in the outbox.

`data` carries what the owner needs to act (ids, file name, viewer email and name, ip, page
count) and never a view token, an API key or document content. `viewId` is the link's internal
id, not its token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vaultd.db import Db
from vaultd.services import outbox
from vaultd.timefmt import iso_utc

if TYPE_CHECKING:  # links emits events itself: a runtime import would be circular
    from vaultd.services.links import OpenLink


def _file_data(file: Mapping[str, Any]) -> dict[str, Any]:
    return {"fileId": file["_id"], "fileName": file["name"],
            "pageCount": int(file.get("pageCount", 0))}


def _link_data(link: Mapping[str, Any], file: Mapping[str, Any]) -> dict[str, Any]:
    return {"viewId": link["_id"], **_file_data(file), "viewerEmail": link["viewerEmail"],
            "viewerName": link["viewerName"], "expiresAt": iso_utc(link["expiresAt"])}


async def file_uploaded(db: Db, file: Mapping[str, Any]) -> None:
    data = {**_file_data(file), "kind": file["kind"], "contentType": file["contentType"],
            "size": int(file["size"])}
    await outbox.emit(db, file["accountId"], "file.uploaded", data)


async def file_deleted(db: Db, file: Mapping[str, Any]) -> None:
    await outbox.emit(db, file["accountId"], "file.deleted", _file_data(file))


async def file_downloaded(db: Db, file: Mapping[str, Any], viewer_email: str | None) -> None:
    data = {**_file_data(file), "viewerEmail": viewer_email}
    await outbox.emit(db, file["accountId"], "file.downloaded", data)


async def view_created(db: Db, link: Mapping[str, Any], file: Mapping[str, Any]) -> None:
    await outbox.emit(db, link["accountId"], "view.created", _link_data(link, file))


async def view_revoked(db: Db, link: Mapping[str, Any]) -> None:
    file = await db.files.find_one({"_id": link["fileId"]}, {"name": 1, "pageCount": 1})
    data = _link_data(link, file or {"_id": link["fileId"], "name": None})
    await outbox.emit(db, link["accountId"], "view.revoked", data)


async def file_links_revoked(db: Db, account_id: str, file_id: str, count: int) -> None:
    """`POST /files/:id/revoke-views`: one event for the file, with how many links it disabled."""
    if count:
        file = await db.files.find_one({"_id": file_id}, {"name": 1, "pageCount": 1})
        data = {**_file_data(file or {"_id": file_id, "name": None}), "revoked": count}
        await outbox.emit(db, account_id, "view.revoked", data)


async def view_opened(db: Db, opened: OpenLink, ip: str | None) -> None:
    data = {**_link_data(opened.link, opened.file), "ip": ip}
    await outbox.emit(db, opened.account.id, "view.opened", data)


async def view_completed(db: Db, opened: OpenLink) -> None:
    await outbox.emit(db, opened.account.id, "view.completed",
                      _link_data(opened.link, opened.file))

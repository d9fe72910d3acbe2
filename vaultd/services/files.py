"""Stored files: listing, lookup, deletion and the read side of downloads."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from vaultd.db import Db
from vaultd.errors import Forbidden, NotFound
from vaultd.records import FileDoc
from vaultd.services import access_log, analytics, quota, renditions, webhook_events
from vaultd.services.blobs import BlobStore
from vaultd.timefmt import iso_utc, utcnow

log = logging.getLogger("vaultd.files")

PER_PAGE_DEFAULT = 25
PER_PAGE_MAX = 100


def is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower() and len(value) == 36
    except (ValueError, AttributeError, TypeError):
        return False


def file_json(doc: FileDoc, active_links: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": doc["_id"],
        "name": doc["name"],
        "kind": doc["kind"],
        "contentType": doc["contentType"],
        "size": int(doc["size"]),
        "pageCount": int(doc["pageCount"]),
        "createdAt": iso_utc(doc["createdAt"]),
    }
    if active_links is not None:
        body["activeLinks"] = active_links
    return body


async def get_file(db: Db, account_id: str, file_id: str) -> FileDoc:
    """A stored file of this account; unknown, foreign, malformed and deleted ids are all 404."""
    if not is_uuid(file_id):
        raise NotFound("file not found")
    doc = await db.files.find_one({"_id": file_id.lower()})
    if doc is None or doc["accountId"] != account_id or doc.get("state") != "stored":
        raise NotFound("file not found")
    return doc


async def active_link_counts(db: Db, file_ids: list[str]) -> dict[str, int]:
    pipeline: list[dict[str, Any]] = [
        {"$match": {"fileId": {"$in": file_ids}, "revoked": False, "expiresAt": {"$gt": utcnow()}}},
        {"$group": {"_id": "$fileId", "n": {"$sum": 1}}},
    ]
    cursor = await db.raw(db.links.name).aggregate(pipeline)
    return {row["_id"]: int(row["n"]) async for row in cursor}


async def list_files(db: Db, account_id: str, page: int, per_page: int) -> dict[str, Any]:
    query = {"accountId": account_id, "state": "stored"}
    total = await db.files.count_documents(query)
    cursor = (
        db.files.find(query)
        .sort([("createdAt", -1), ("_id", -1)])
        .skip((page - 1) * per_page)
        .limit(per_page)
    )
    docs = [doc async for doc in cursor]
    counts = await active_link_counts(db, [doc["_id"] for doc in docs])
    return {"files": [file_json(d, counts.get(d["_id"], 0)) for d in docs], "total": total}


def require_downloadable(doc: FileDoc) -> None:
    if doc["kind"] != "delivery":
        raise Forbidden("source files are view-only and cannot be downloaded")


async def delete_file(db: Db, store: BlobStore, account_id: str, file_id: str) -> None:
    """Claim the file, then remove links, usage, blob and record; `finish_delete` is resumable."""
    doc = await get_file(db, account_id, file_id)
    claimed = await db.files.find_one_and_update(
        {"_id": doc["_id"], "state": "stored"},
        {"$set": {"state": "deleting"}, "$currentDate": {"deletingAt": True}},
    )
    if claimed is None:
        raise NotFound("file not found")
    await finish_delete(db, store, claimed)


async def finish_delete(db: Db, store: BlobStore, doc: FileDoc) -> None:
    account_id, file_id = doc["accountId"], doc["_id"]
    # Links go first so that no page is served from here on, in any process.
    await db.links.delete_many({"fileId": file_id})
    await db.room_items.delete_many({"fileId": file_id})  # it leaves every room (issue 27)
    await analytics.forget_file(db, file_id)
    await quota.release_file(db, account_id, file_id, int(doc["size"]))
    await store.backend.delete(doc["blob"]["name"])
    await renditions.delete(store, doc)
    await access_log.record(db, account_id, file_id, "delete")
    await webhook_events.file_deleted(db, doc)
    await db.files.delete_one({"_id": file_id})
    await quota.finish_release(db, account_id, file_id)

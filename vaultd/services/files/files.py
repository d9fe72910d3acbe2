"""Stored files: listing, lookup and the read side of downloads (deletion: `deletions`)."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from vaultd.db import Db
from vaultd.errors import Forbidden, NotFound
from vaultd.records import AccountDoc, FileDoc
from vaultd.services.accounts import link_counts
from vaultd.services.common.newest import newest
from vaultd.services.common.numbered import newest_numbered
from vaultd.services.files import file_gaps
from vaultd.timefmt import iso_utc, utcnow

log = logging.getLogger("vaultd.files")

PER_PAGE_DEFAULT = 25
PER_PAGE_MAX = 100
# Records are stamped by each process's clock: a little apart from this one's is still read.
SLACK = timedelta(minutes=1)


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


async def list_files(db: Db, account_id: str, page: int, per_page: int, *,
                     active_links: bool = True) -> dict[str, Any]:
    """Newest first. `total` is the account's documents counter (less its unfinished uploads),
    and the page is read by the files' numbers in the account (`services.common.numbered`):
    page n reads n pages' records, so page 1 costs the same at 100 files as at 100,000, however
    they arrived (an import's burst included), and a deep page what precedes it. Without
    `active_links` the files come without their count (a read of expired links per file with
    any live one), for a caller that shows only names."""
    account = await db.accounts.find_one(
        {"_id": account_id},
        {"usage": 1, "pendingUploads": 1, "createdAt": 1, "fileSeq": 1, "fileSeqFloor": 1,
         file_gaps.FIELD: 1})
    if account is None:
        raise NotFound("account not found")
    total = max(int(account["usage"]["documents"]) - len(account["pendingUploads"]), 0)
    wanted = min(page * per_page, total)
    query = {"accountId": account_id, "state": "stored"}
    docs: list[FileDoc] = []
    if wanted:
        docs = await newest_numbered(db.files, query, "seq", count=wanted,
                                     top=account.get("fileSeq", 0),
                                     floor=account.get("fileSeqFloor", 1),
                                     empty=file_gaps.known(account))
        await file_gaps.remember(db, account, docs)
    if len(docs) < wanted:
        docs += await _unnumbered(db, account, query, len(docs), wanted - len(docs))
    docs = docs[(page - 1) * per_page:]
    if not active_links:
        return {"files": [file_json(doc) for doc in docs], "total": total}
    counts = await link_counts.files_live(db, [dict(doc) for doc in docs])
    return {"files": [file_json(d, counts[d["_id"]]) for d in docs], "total": total}


async def _unnumbered(db: Db, account: AccountDoc, query: dict[str, Any], numbered: int,
                      wanted: int) -> list[FileDoc]:
    """The newest `wanted` files without a number, after the `numbered` ones: files written
    before numbers existed that `db_indexes.number_files_once` has not numbered (a record
    restored or written by an older version). Read by time, as the listing was before; the
    numbered ones are newer, so they are read again and left out here (a filter on `seq` would
    be a field outside the index, and SecantusDB would scan the collection)."""
    now, oldest = utcnow(), account["createdAt"] - SLACK
    docs = (await newest(db.files, query, "createdAt", count=numbered + wanted,
                         latest=now + SLACK, oldest=oldest)).docs
    return [doc for doc in docs if "seq" not in doc][:wanted]


def require_downloadable(doc: FileDoc) -> None:
    if doc["kind"] != "delivery":
        raise Forbidden("source files are view-only and cannot be downloaded")

"""A file's time per page across all its links, kept as one document per file, so that the
console's chart reads one record however many links the file has.

`file_page_stats` holds, per page, the views and the seconds of every link of the file (room
links included) and how many links read the page. It is increased in the same places as the
links' own `link_stats` records (`analytics.note_pages`, `analytics.add_time`), by one update
each, with no upsert: it starts to exist when first read, built once from the file's
`link_stats` (a file older than it, or one restored from a backup, which does not carry it:
it is derived, never a source). An increment that lands while that first build reads is not in
it: the one case where the totals may be short, by one batch of a few pages, once per file.

"Readers" here are links, not distinct addresses: a viewer with two links of one file counts
twice. The API's `GET /v1/files/:id/analytics` still computes distinct viewers and medians from
every link's record, for a caller that asks for exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db, RawDoc

COLLECTION = "file_page_stats"


class PageTotals(TypedDict):
    page: int
    views: int
    seconds: float
    readers: int


def _key(page: int) -> str:
    return f"p{page}"


async def add_views(db: Db, file_id: str, views: Mapping[int, int], new_readers: list[int]
                    ) -> None:
    increments: dict[str, int] = {f"pages.{_key(page)}.views": n for page, n in views.items()}
    for page in new_readers:
        increments[f"pages.{_key(page)}.readers"] = 1
    if increments:
        await db.raw(COLLECTION).update_one({"_id": file_id}, {"$inc": increments})


async def add_seconds(db: Db, file_id: str, seconds: Mapping[int, float]) -> None:
    increments = {f"pages.{_key(page)}.seconds": round(value, 3)
                  for page, value in seconds.items()}
    if increments:
        await db.raw(COLLECTION).update_one({"_id": file_id}, {"$inc": increments})


async def totals(db: Db, file_id: str, page_count: int) -> list[PageTotals]:
    """Every page's totals: one read, or the first build from `link_stats`."""
    doc = await db.raw(COLLECTION).find_one({"_id": file_id})
    if doc is None:
        doc = await _build(db, file_id)
    pages: dict[str, Any] = doc.get("pages") or {}
    rows: list[PageTotals] = []
    for page in range(1, page_count + 1):
        row = pages.get(_key(page)) or {}
        rows.append({"page": page, "views": int(row.get("views", 0)),
                     "seconds": round(float(row.get("seconds", 0.0)), 3),
                     "readers": int(row.get("readers", 0))})
    return rows


async def _build(db: Db, file_id: str) -> RawDoc:
    pages: dict[str, dict[str, float]] = {}
    async for stats in db.link_stats.find({"fileId": file_id}, {"pages": 1}):
        for key, row in (stats.get("pages") or {}).items():
            total = pages.setdefault(key, {"views": 0, "seconds": 0.0, "readers": 0})
            total["views"] += int(row.get("views", 0))
            total["seconds"] += float(row.get("seconds", 0.0))
            total["readers"] += 1 if row.get("views", 0) else 0
    doc: RawDoc = {"_id": file_id, "pages": pages}
    try:
        await db.raw(COLLECTION).insert_one(doc)
    except DuplicateKeyError:  # another request built it first: theirs holds
        found = await db.raw(COLLECTION).find_one({"_id": file_id})
        return found if found is not None else doc
    return doc


async def forget(db: Db, file_id: str) -> None:
    """The file is gone (its links' records go with it)."""
    await db.raw(COLLECTION).delete_one({"_id": file_id})

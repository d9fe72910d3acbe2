"""The read side of engagement analytics: per link, and per file across links and viewers.

Everything is computed from the file's `link_stats` documents (one per link, see
`services.analytics.analytics`), never from the access log.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import FileDoc, LinkStatsDoc
from vaultd.secrets import digest, is_token
from vaultd.services.analytics.analytics import page_key
from vaultd.services.files.files import get_file
from vaultd.services.links.links import LINK_NOT_FOUND
from vaultd.timefmt import iso_utc


class PageRow(TypedDict):
    page: int
    views: int
    seconds: float


class FilePageRow(PageRow):
    uniqueViewers: int
    medianSeconds: float


class Summary(TypedDict):
    pages: list[PageRow]
    firstOpenedAt: str | None
    lastSeenAt: str | None
    pagesViewed: int
    completion: float
    totalSeconds: float


class ViewerSummary(Summary):
    viewerEmail: str
    viewerName: str
    links: int


class FileAnalytics(TypedDict):
    fileId: str
    fileName: str
    pageCount: int
    pages: list[FilePageRow]
    viewers: list[ViewerSummary]


@dataclass
class Tally:
    """One viewer's (or one link's) counts, merged from link_stats documents."""

    page_count: int
    views: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    seen: set[int] = field(default_factory=set)
    first: datetime | None = None
    last: datetime | None = None
    total: float = 0.0
    links: int = 0

    def add(self, doc: LinkStatsDoc) -> None:
        pages = doc.get("pages", {})
        for page in range(1, self.page_count + 1):
            row = pages.get(page_key(page), {})
            self.views[page] += int(row.get("views", 0))
            self.seconds[page] += float(row.get("seconds", 0.0))
        self.seen.update(doc.get("seen", []))
        self.first = _earliest(self.first, doc.get("firstOpenedAt"))
        self.last = _latest(self.last, doc.get("lastSeenAt"))
        self.total += float(doc.get("totalSeconds", 0.0))
        self.links += 1

    def summary(self) -> Summary:
        viewed = len(self.seen)
        return {
            "pages": [{"page": p, "views": self.views[p], "seconds": round(self.seconds[p], 3)}
                      for p in range(1, self.page_count + 1)],
            "firstOpenedAt": iso_utc(self.first) if self.first else None,
            "lastSeenAt": iso_utc(self.last) if self.last else None,
            "pagesViewed": viewed,
            "completion": round(viewed / self.page_count, 4) if self.page_count else 0.0,
            "totalSeconds": round(self.total, 3),
        }


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


async def view_analytics(db: Db, account_id: str, token: str) -> Summary:
    """One link's analytics; the link may have expired or been revoked (the owner still asks),
    but an unknown, foreign or deleted-file link is 404 like everywhere else."""
    link = await db.links.find_one({"hash": digest(token)}) if is_token(token) else None
    if link is None or link["accountId"] != account_id:
        raise NotFound(LINK_NOT_FOUND)
    file = await get_file(db, account_id, link["fileId"])
    tally = Tally(int(file["pageCount"]))
    stats = await db.link_stats.find_one({"_id": link["_id"]})
    if stats is not None:
        tally.add(stats)
    return tally.summary()


async def file_analytics(db: Db, account_id: str | None, file_id: str) -> FileAnalytics:
    """Per page across links and per viewer email; `account_id` None is the operator (CLI)."""
    file = await (get_file(db, account_id, file_id) if account_id else _any_file(db, file_id))
    page_count = int(file["pageCount"])
    viewers: dict[str, Tally] = {}
    names: dict[str, str] = {}
    async for doc in db.link_stats.find({"fileId": file["_id"]}):
        email = doc["viewerEmail"]
        viewers.setdefault(email, Tally(page_count)).add(doc)
        names[email] = str(doc.get("viewerName") or email)
    return {
        "fileId": file["_id"],
        "fileName": file["name"],
        "pageCount": page_count,
        "pages": [_file_page(page, viewers.values()) for page in range(1, page_count + 1)],
        "viewers": [_viewer(email, names[email], tally)
                    for email, tally in sorted(viewers.items())],
    }


def _file_page(page: int, viewers: Iterable[Tally]) -> FilePageRow:
    tallies = [t for t in viewers if t.views[page] or t.seconds[page]]
    seconds = [t.seconds[page] for t in tallies]
    return {"page": page, "views": sum(t.views[page] for t in tallies),
            "uniqueViewers": len(tallies), "seconds": round(sum(seconds), 3),
            "medianSeconds": round(statistics.median(seconds), 3) if seconds else 0.0}


def _viewer(email: str, name: str, tally: Tally) -> ViewerSummary:
    return {"viewerEmail": email, "viewerName": name, "links": tally.links, **tally.summary()}


async def _any_file(db: Db, file_id: str) -> FileDoc:
    doc = await db.files.find_one({"_id": file_id.lower()})
    if doc is None or doc.get("state") != "stored":
        raise NotFound("file not found")
    return doc

"""Engagement aggregates, maintained on write: one `link_stats` document per view link.

Every change is a single atomic update of that document (`$inc`, `$addToSet`, `$max`, upserts),
so several vaultd processes writing at once stay exact and reading the analytics never scans the
access log. Per page the document keeps this link's views and seconds, which is what a median
across viewers needs (`services.analytics.analytics_report`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NotRequired

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import InvalidRequest, Unprocessable
from vaultd.records import LinkStatsDoc, LinkStatsOpening
from vaultd.services.analytics import file_pages
from vaultd.timefmt import utcnow

if TYPE_CHECKING:  # for annotations only: the page path passes an OpenLink in
    from vaultd.services.links.links import OpenLink

MAX_EVENTS = 100
MAX_EVENT_SECONDS = 60
FUTURE_SLACK = timedelta(seconds=5)  # viewers' clocks drift; an `at` this far ahead is refused
NOT_OPENED = "the link has not been opened yet: no time can be reported"
TOO_MUCH_TIME = "the report adds more time than has passed since the link was opened"


@dataclass(frozen=True)
class ActivityEvent:
    page: int
    seconds: float
    at: datetime | None


@dataclass(frozen=True)
class PageNote:
    """What serving one page changed: the link's first open, or its last unseen page."""

    first_open: bool
    completed: bool


def page_key(page: int) -> str:
    return f"p{page}"


def parse_activity(body: dict[str, Any], page_count: int) -> list[ActivityEvent]:
    """The events of one report, validated; InvalidRequest names the first bad field."""
    events = body.get("events")
    if not isinstance(events, list) or not events:
        raise InvalidRequest("events must be a non-empty list of {page, seconds}")
    if len(events) > MAX_EVENTS:
        raise InvalidRequest(f"at most {MAX_EVENTS} events per report")
    return [_parse_event(item, index, page_count) for index, item in enumerate(events)]


def _parse_event(item: Any, index: int, page_count: int) -> ActivityEvent:
    where = f"events[{index}]"
    if not isinstance(item, dict):
        raise InvalidRequest(f"{where} must be an object {{page, seconds}}")
    page = item.get("page")
    if isinstance(page, bool) or not isinstance(page, int):
        raise InvalidRequest(f"{where}.page must be an integer")
    if not 1 <= page <= page_count:
        raise InvalidRequest(f"{where}.page {page} does not exist: the document has "
                             f"{page_count} pages")
    seconds = item.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) \
            or not math.isfinite(seconds) or not 0 < seconds <= MAX_EVENT_SECONDS:
        raise InvalidRequest(f"{where}.seconds must be a number above 0 and at most "
                             f"{MAX_EVENT_SECONDS}")
    return ActivityEvent(page, round(float(seconds), 3), _parse_at(item.get("at"), where))


def _parse_at(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if not isinstance(value, str) or moment is None or moment.tzinfo is None:
        raise InvalidRequest(f"{where}.at must be an ISO 8601 time with a zone, e.g. "
                             "2026-11-22T01:02:03.456Z")
    if moment > utcnow() + FUTURE_SLACK:
        raise InvalidRequest(f"{where}.at is in the future")
    return moment


class _FirstOpen(LinkStatsOpening):
    """What a `link_stats` record's first write sets: the opening, not announced yet."""

    openAnnounced: bool
    alertOwed: NotRequired[bool]  # its member's notification not queued yet (notifications)
    roomId: NotRequired[str]  # a room link's document: its room reads it by this (rooms.activity)


def _first_open(opened: OpenLink, now: datetime, marker: str, ip: str | None) -> _FirstOpen:
    link = opened.link
    # openAnnounced: the open and "its webhook is not queued yet" are one write (see outbox).
    first: _FirstOpen = {
        "accountId": link["accountId"], "fileId": link["fileId"],
        "viewerEmail": link["viewerEmail"], "viewerName": link["viewerName"],
        "pageCount": int(opened.file["pageCount"]), "totalSeconds": 0.0,
        "firstOpenedAt": now, "openMarker": marker, "openIp": ip, "openAnnounced": False}
    if "createdBy" in link:
        first["alertOwed"] = True
    if opened.room_id is not None:
        first["roomId"] = opened.room_id
    return first


async def _touch(
    db: Db, opened: OpenLink, ip: str | None, extra: dict[str, Any],
    fields: tuple[str, ...] = ()
) -> tuple[bool, LinkStatsDoc]:
    """Upsert the link's document (first open stamped once); True when this call created it.
    `fields`: more of the document to answer with, as it is after the update."""
    now, marker = utcnow(), uuid.uuid4().hex
    on_insert = _first_open(opened, now, marker, ip)
    update: dict[str, Any] = {"$setOnInsert": on_insert, "$max": {"lastSeenAt": now}, **extra}
    projection = {"openMarker": 1, "seen": 1, "pageCount": 1, "completedAt": 1,
                  **dict.fromkeys(fields, 1)}
    for _ in range(2):  # two processes upserting at once: the loser finds the document
        try:
            doc = await db.link_stats.find_one_and_update(
                {"_id": opened.link["_id"]}, update, upsert=True, projection=projection,
                return_document=ReturnDocument.AFTER)
        except DuplicateKeyError:  # MongoDB: the loser's update was not applied, run it again
            continue
        if doc is None:
            # SecantusDB (0.7) answers some of several concurrent upserts with no document,
            # the update applied all the same (measured: 8 concurrent $inc, n = 8, up to 6 of
            # them None): read it, never apply it again (page views would count twice).
            doc = await db.link_stats.find_one({"_id": opened.link["_id"]}, projection)
            if doc is None:
                continue
        return bool(doc["openMarker"] == marker), doc
    raise Unprocessable("could not record the link's activity; retry")


async def note_open(db: Db, opened: OpenLink, ip: str | None) -> bool:
    """Record that the link was opened; True on its first open (in any process)."""
    first, _ = await _touch(db, opened, ip, {})
    return first


async def note_pages(db: Db, opened: OpenLink, views: Mapping[int, int], ip: str | None
                     ) -> PageNote:
    """Count served pages (`views`: page -> times served) in one update; `completed` is True
    for exactly one call: the one that saw the last unseen page."""
    increments = {f"pages.{page_key(page)}.views": count for page, count in views.items()}
    first, doc = await _touch(db, opened, ip, {"$inc": increments,
                                               "$addToSet": {"seen": {"$each": sorted(views)}}},
                              tuple(increments))
    # A page whose views are now exactly what this call added was not read through this link
    # before: one more reader of it for the file's totals (file_pages).
    counted = doc.get("pages") or {}
    new_readers = [page for page, count in views.items()
                   if int((counted.get(page_key(page)) or {}).get("views", 0)) == count]
    await file_pages.add_views(db, opened.link["fileId"], views, new_readers)
    if doc.get("completedAt") is not None or len(doc.get("seen", [])) < doc["pageCount"]:
        return PageNote(first, False)
    result = await db.link_stats.update_one(
        {"_id": opened.link["_id"], "completedAt": None},
        {"$set": {"completedAt": utcnow(), "completeAnnounced": False}})
    return PageNote(first, result.modified_count == 1)


async def add_time(db: Db, opened: OpenLink, events: list[ActivityEvent]) -> float:
    """Add reported seconds; refused whole if the link's total would exceed the time since it
    was first opened. One conditional update: exact with concurrent reports. Returns the total."""
    stats = await db.link_stats.find_one({"_id": opened.link["_id"]}, {"firstOpenedAt": 1})
    if stats is None:
        raise Unprocessable(NOT_OPENED)
    now = utcnow()
    elapsed = (now - stats["firstOpenedAt"]).total_seconds()
    added = round(sum(event.seconds for event in events), 3)
    increments: dict[str, float] = {"totalSeconds": added}
    for event in events:
        key = f"pages.{page_key(event.page)}.seconds"
        increments[key] = round(increments.get(key, 0.0) + event.seconds, 3)
    last = max([event.at for event in events if event.at is not None] + [now])
    result = await db.link_stats.update_one(
        {"_id": opened.link["_id"], "totalSeconds": {"$lte": elapsed - added}},
        {"$inc": increments, "$max": {"lastSeenAt": min(last, now)}})
    if result.matched_count == 0:
        raise Unprocessable(TOO_MUCH_TIME)
    per_page: dict[int, float] = {}
    for event in events:
        per_page[event.page] = per_page.get(event.page, 0.0) + event.seconds
    await file_pages.add_seconds(db, opened.link["fileId"], per_page)
    return added

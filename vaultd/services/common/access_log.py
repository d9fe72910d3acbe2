"""The access log: one entry per action on a file (spec 2.4 and 6).

Every action is its own entry, repeated `view`s included (spec 4.9: each details call writes
one). A flood of entries cannot hide older ones: `latest_for_file` pages back with `before` and
filters with `action`.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, get_args

from vaultd.db import Db
from vaultd.records import AccessLogDoc, Action
from vaultd.services.common import log_fence, numbered_log
from vaultd.services.common.acting import acting
from vaultd.services.common.newest import FIRST_WINDOW, newest
from vaultd.services.common.recent import RecentRecords
from vaultd.timefmt import iso_utc, utcnow

LATEST = 200
# A file's actions; `room.view` is a room's (services.rooms.activity), not on a file's log.
ACTIONS: frozenset[str] = frozenset(get_args(Action)) - {"room.view"}
# The fields of an entry as the API and the export show it (spec 2.4), in the export's order.
ENTRY_FIELDS = ("at", "fileId", "action", "viewerEmail", "ip", "page")
# Entries are stamped by each process's clock: a little before the file's record, or ahead of
# this process's now, is still read.
UPLOAD_SLACK = timedelta(minutes=1)
# The time the last full page of a log spanned, per file and action, in this process, for a
# minute: the next read of that log (a poll) starts with a window that size instead of growing
# one from a second (eight round trips on a log of 10^4 entries a year). Only a hint: what is
# new since costs what a window of it holds, and a minute bounds that as the walk's growth does.
PAGE_SPANS: RecentRecords[timedelta] = RecentRecords(ttl=60.0, capacity=4096)
HINT_AIM = 1.05  # that span held a full page under a minute ago: a little more covers what moved
# The same span is kept on the file's record (`logSpans`, seconds by action), so that another
# process, or this one after the minute, starts where the last full page was: a poll through a
# load balancer over N nodes is one round trip, as on one. It is written (one update by `_id`)
# only when a page's span moved by more than this factor from the kept one: a log read at a
# steady rate writes nothing.
KEPT_SPAN_DRIFT = 1.25


def valid_ip(value: str | None) -> str | None:
    """A syntactically valid IPv4/IPv6 address in canonical form, else None (ignored, unlogged)."""
    if not value:
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


async def record(
    db: Db,
    account_id: str,
    file_id: str | None,
    action: Action,
    *,
    viewer_email: str | None = None,
    ip: str | None = None,
    page: int | None = None,
    render_id: str | None = None,
    viewer_name: str | None = None,
    entry_id: str | None = None,
    detail: dict[str, Any] | None = None,
    room_id: str | None = None,
) -> str:
    """Appends an entry; returns its id (`entry_id` when the caller chose it beforehand, as a
    webhook held for this entry does). `file_id` None: an entry about no file (a room's
    `room.view`, a room link's gates) has no `fileId` at all, rather than an empty one."""
    entry: AccessLogDoc = {
        "_id": entry_id or str(uuid.uuid4()),
        "accountId": account_id,
        "action": action,
        "at": utcnow(),
    }
    if file_id is not None:
        entry["fileId"] = file_id
    if viewer_email:
        entry["viewerEmail"] = viewer_email
    if ip:
        entry["ip"] = ip
    if page is not None:
        entry["page"] = page
    if viewer_name:
        entry["viewerName"] = viewer_name  # for leak tracing; not part of the spec's entry
    if render_id is not None:
        entry["renderId"] = render_id  # the served page's forensic id (render.forensic)
    if detail:
        entry["detail"] = detail  # verify / agreement entries (services.gates.events)
    if room_id is not None:
        entry["roomId"] = room_id  # read through a room link (services.rooms)
    actor = acting()
    if actor is not None:
        entry["actor"] = actor  # stored for the account's console; entry_json leaves it out
    await log_fence.insert(db, "access_log", entry)  # one command: see log_fence
    return entry["_id"]


async def withdraw(db: Db, entry_id: str) -> None:
    """Removes an entry written ahead of an action that then did not happen (a page that was
    rendered but not served). Entries of actions that happened are never removed."""
    await db.access_log.delete_one({"_id": entry_id})


def entry_json(doc: AccessLogDoc) -> dict[str, Any]:
    """The spec's fields of an entry (ENTRY_FIELDS); internal ones (renderId...) stay out.
    An entry about no file (`room.view`: stored with no `fileId`, or `""` before) has no
    `fileId` here, nor in the export (its csv cell is empty); one of a room carries `roomId`."""
    out: dict[str, Any] = {"at": iso_utc(doc["at"])}
    if doc.get("fileId"):
        out["fileId"] = doc["fileId"]
    out["action"] = doc["action"]
    if "viewerEmail" in doc:
        out["viewerEmail"] = doc["viewerEmail"]
    if "ip" in doc:
        out["ip"] = doc["ip"]
    if "page" in doc:
        out["page"] = doc["page"]
    if "detail" in doc:
        out["detail"] = doc["detail"]
    if "roomId" in doc:
        out["roomId"] = doc["roomId"]
    return out


async def latest_for_file(
    db: Db, file_id: str, *, since: datetime, before: datetime | None = None,
    action: str | None = None, kept_spans: Mapping[str, float] | None = None,
    count: int | None = None,
) -> list[dict[str, Any]]:
    """The latest entries, newest first; `before` (exclusive) and `action` reach older ones.

    `since` is the file's upload: no entry of it is older, so the read stops there. Entries are
    read by time ranges (`services.common.newest`), so a page costs what it returns however long the
    log. A full page also carries every other entry of its last entry's millisecond: the next
    page asks for entries strictly before that `at`, which would skip them otherwise (read only when
    the entry after the page, which the last window held, shares that millisecond).

    `kept_spans` is the file record's `logSpans` (read with it, so no round trip): the span of
    the last full page any process read, the first window when this process has none fresher.
    None: the caller did not read them, and they are neither used nor written.

    `count`: the entries a page holds (None: the API's LATEST, read at the call, so a test may
    shrink the page with its log; the console shows fewer). The spans kept are those of LATEST
    entries, whatever the page that measured them: a page of `count` starts with that span
    scaled to it, so pages of both sizes share one hint.

    The log (whole, or of one `action`) is read by the entries' numbers in the file where they
    have them (`numbered_log`): a burst behind the page is not walked. The spans are for the
    time windows of a log not numbered (`audit.enabled` off everywhere)."""
    count = LATEST if count is None else count
    query: dict[str, Any] = {"fileId": file_id}
    numbered = await numbered_log.newest_entries(
        db, numbered_log.FILE, file_id, count=count, oldest=since - UPLOAD_SLACK,
        below=(before, "") if before is not None else None, action=action)
    if action is not None:
        query["action"] = action  # on the (fileId, action, at) index: a range as well
    if numbered is not None:
        page_docs = await numbered_log.with_ties(db.raw(db.access_log.name), query, numbered,
                                                 count)
        return [entry_json(doc) for doc in page_docs]
    top = before or utcnow() + UPLOAD_SLACK
    hint_key = f"{file_id} {action or ''}"
    span_key = action or "all"
    kept = (kept_spans or {}).get(span_key)
    span = PAGE_SPANS.fresh(hint_key) or (timedelta(seconds=kept) if kept else None)
    scale = count / LATEST
    page = await newest(db.access_log, query, "at", count=count, before=before,
                        oldest=since - UPLOAD_SLACK, latest=top,
                        first_window=span * scale * HINT_AIM if span else FIRST_WINDOW)
    docs, following = page.docs, page.following
    if len(docs) == count:
        spanned = (top - docs[-1]["at"]) / scale
        PAGE_SPANS.keep(hint_key, spanned)
        if kept_spans is not None and _drifted(kept, spanned.total_seconds()):
            await db.files.update_one({"_id": file_id},
                                      {"$set": {f"logSpans.{span_key}": spanned.total_seconds()}})
    if following is not None and following["at"] == docs[-1]["at"]:
        last = docs[-1]
        # One millisecond's entries, on the index; the `_id` bound is applied here (a filter
        # field outside the index would make SecantusDB scan the whole log).
        tied = db.access_log.find({**query, "at": last["at"]}).sort("_id", -1)
        docs += [doc async for doc in tied if doc["_id"] < last["_id"]][:count]
    return [entry_json(doc) for doc in docs]


def _drifted(kept: float | None, seconds: float) -> bool:
    """Whether a page's span has moved far enough from the kept one to be written."""
    if not kept or kept <= 0 or seconds <= 0:
        return seconds > 0
    return max(kept / seconds, seconds / kept) > KEPT_SPAN_DRIFT

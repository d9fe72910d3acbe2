"""Shared steps of the access log's numbering tests (`tests/test_access_log_action_numbers.py`,
`tests/test_access_log_older_numbers.py`, `tests/test_access_log_numbers.py`,
`tests/test_access_log_page_reads.py`): a numbering round as the audit sequencer runs it,
the log as the database holds it, and every reader's pages end to end."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import Db
from vaultd.services.common import access_log, feed, log_fence, log_numbering, numbered_log
from vaultd.services.rooms import activity as room_activity
from vaultd.timefmt import utcnow

ACCOUNT, ROOM = "acct-numbers", "room-numbers"
LONG_AGO = datetime(2024, 1, 1).astimezone()


async def now_past_the_last_write() -> datetime:
    """Now, once the clock has left the millisecond of anything written before the call: the
    database keeps milliseconds, so an entry of the horizon's own millisecond would lie at the
    horizon, not before it, and a round would leave it to the next (the sequencer's horizon
    trails its clock by `audit.late_arrival_seconds`; a test's does not). An entry written
    after it lies at or after the horizon, as a new one must."""
    await asyncio.sleep(0.002)
    return utcnow()


async def numbering_round(db: Db, horizon: datetime | None = None) -> int:
    """What the audit sequencer's round does for the log's new entries: the fence to the
    horizon (unless given, past every entry written before the call), then the numbers behind
    it."""
    horizon = horizon or await now_past_the_last_write()
    await log_fence.raise_horizon(db, "access_log", horizon)
    return await log_numbering.number_new_entries(db, horizon)


async def number_everything_new(db: Db) -> None:
    """Rounds until every entry stamped before now has its numbers (a round reads a stretch
    sized from the last one's: one may find nothing in a quiet spell)."""
    until = await now_past_the_last_write()
    while True:
        await numbering_round(db, until)
        state = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
        if state is not None and state["horizon"] >= until:
            return


def entries(file_id: str, action: str, start: datetime, count: int, per_ms: int,
            room: bool = True, step: timedelta = timedelta(milliseconds=1),
            ) -> list[dict[str, Any]]:
    """`count` entries of `action` on `file_id` from `start`, `per_ms` every `step`, as an
    older vaultd wrote them: no numbers."""
    return [{"_id": str(uuid.uuid4()), "accountId": ACCOUNT, "fileId": file_id,
             **({"roomId": ROOM} if room else {}), "action": action,
             **({"page": 1} if action == "page" else {}),
             "at": start + step * (place // per_ms)} for place in range(count)]


async def insert(db: Db, docs: list[dict[str, Any]]) -> None:
    for first in range(0, len(docs), 2000):
        await db.raw(db.access_log.name).insert_many(docs[first:first + 2000])


async def in_order(db: Db, query: dict[str, Any]) -> list[Any]:
    """Every entry of `query`, newest first in the log's order (time, then id), from the
    database itself."""
    docs = await db.raw(db.access_log.name).find(query).to_list()
    return sorted(docs, key=lambda doc: (doc["at"], doc["_id"]), reverse=True)


async def file_pages(db: Db, file_id: str, count: int,
                     action: str | None = None) -> list[dict[str, Any]]:
    """The file's log through `latest_for_file`, page after page by `before`."""
    shown: list[dict[str, Any]] = []
    before: datetime | None = None
    while True:
        page = await access_log.latest_for_file(db, file_id, since=LONG_AGO, before=before,
                                                action=action, count=count)
        shown += page
        if len(page) < count:
            return shown
        before = datetime.fromisoformat(page[-1]["at"])


async def room_pages(db: Db, action: str | None = None) -> list[dict[str, Any]]:
    """The room's log through its route's read, page after page by `before`."""
    shown: list[dict[str, Any]] = []
    before: datetime | None = None
    while True:
        page = await room_activity.latest_entries(db, ROOM, before=before, action=action,
                                                  since=LONG_AGO)
        shown += page
        if len(page) < access_log.LATEST:
            return shown
        before = datetime.fromisoformat(page[-1]["at"])


async def console_pages(db: Db, per_page: int, action: str | None = None) -> list[str]:
    """The ids of the account's log through the console's pages, cursor after cursor."""
    shown: list[str] = []
    after: feed.Cursor | None = None
    while True:
        page = await feed.log_page(db, ACCOUNT, per_page=per_page, after=after, action=action)
        shown += [entry["_id"] for entry in page.entries]
        if page.next is None:
            return shown
        after = page.next


async def walked(db: Db, recorder: QueryRecorder,
                 read: Callable[[], Awaitable[Any]]) -> tuple[Any, int]:
    """What `read` returns, and the documents its queries made the database walk."""
    recorder.queries.clear()
    recorder.recording = True
    try:
        result = await read()
    finally:
        recorder.recording = False
    return result, await total_examined(db, list(recorder.queries))

"""An empty or nearly empty log costs a few round trips, not a walk of windows back to its
oldest possible time: a room nobody viewed, an account with one entry, a file with its upload.

Once the older entries' walk is done (`older_log_numbering`), a scope's entries before the
numbering horizon all have numbers, so what lies below them can only be what a tool wrote since
with older times: it is read in one range (`numbered_log.newest_entries`), still read, and a
scope without a counter has nothing numbered to read. Each read's queries are recorded by the
driver's monitoring, on a database of its own per test on the test worker's SecantusDB.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from tests import recorded_database
from tests.db_reads import QueryRecorder
from tests.waiting import wait_until_async
from vaultd.db import Db
from vaultd.services.common import access_log, feed, log_fence, numbered_log, older_log_numbering
from vaultd.services.rooms import activity as room_activity
from vaultd.timefmt import iso_utc, utcnow

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test

ACCOUNT, ROOM, FILE = "acct-empty-logs", "room-empty-logs", "file-empty-logs"
A_MONTH = timedelta(days=30)


async def audit_round(db: Db) -> bool:
    """The access log's part of an audit round: the fence to now, the new entries' numbers
    behind it and a step of the older entries' walk; whether the walk is done."""
    horizon = utcnow()
    await log_fence.raise_horizon(db, "access_log", horizon)
    await older_log_numbering.number_log(db, horizon)
    state: Any = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
    return older_log_numbering.done(state)


async def numbered_vault(db: Db) -> str:
    """A vault whose log is numbered as a running vaultd's is: the rounds started, the walk
    done, then the account's one entry (its file's upload) numbered. Its id."""
    reached: bool = await wait_until_async(lambda: audit_round(db), timeout=30,
                                           what="the walk done")
    assert reached
    entry_id = await access_log.record(db, ACCOUNT, FILE, "upload")

    async def numbered() -> bool:
        await audit_round(db)
        entry = await db.access_log.find_one({"_id": entry_id})
        return entry is not None and "accountSeq" in entry
    done: bool = await wait_until_async(numbered, timeout=30, what="the upload entry numbered")
    assert done
    return entry_id


def log_queries(db: Db, recorder: QueryRecorder) -> list[str]:
    return [query.collection for query in recorder.queries
            if query.collection in (db.access_log.name, db.number_counters.name)]


async def test_a_room_nobody_viewed_reads_its_counter_and_two_ranges(
        db: Db, recorder: QueryRecorder) -> None:
    await numbered_vault(db)
    with recorder.recorded():
        entries = await room_activity.latest_entries(db, ROOM, since=utcnow() - A_MONTH)
    assert entries == []
    # the counters (none for the room), the tail since the horizon, the rest back to the
    # room's creation in one range: no window growing back a month
    assert log_queries(db, recorder) == ["number_counters", "access_log", "access_log"]


async def test_an_accounts_log_of_one_entry_reads_it_and_one_range_below(
        db: Db, recorder: QueryRecorder) -> None:
    entry_id = await numbered_vault(db)
    with recorder.recorded():
        page = await feed.log_page(db, ACCOUNT, per_page=50)
    assert [entry["_id"] for entry in page.entries] == [entry_id] and page.next is None
    # the counters, the tail, then its one number and the rest back to EPOCH in one range of
    # time (the windows growing from two minutes to six years were eight; a range of its
    # numbers and one below them, two)
    assert log_queries(db, recorder) == ["number_counters", "access_log", "access_log"]


async def test_a_files_log_of_its_upload_reads_it_and_one_range_below(
        db: Db, recorder: QueryRecorder) -> None:
    await numbered_vault(db)
    with recorder.recorded():
        entries = await access_log.latest_for_file(db, FILE, since=utcnow() - A_MONTH)
    assert [entry["action"] for entry in entries] == ["upload"]
    assert log_queries(db, recorder) == ["number_counters", "access_log", "access_log"]


async def test_an_older_entry_a_tool_wrote_is_still_read_in_that_range(
        db: Db, recorder: QueryRecorder) -> None:
    entry_id = await numbered_vault(db)
    written = datetime(2024, 5, 1, 12, 0, tzinfo=utcnow().tzinfo)
    old = {"_id": str(uuid.uuid4()), "accountId": ACCOUNT, "fileId": FILE, "action": "view",
           "at": written, "roomId": ROOM}
    await db.raw(db.access_log.name).insert_one(old)  # no number, no fence's mark: a tool's
    with recorder.recorded():
        page = await feed.log_page(db, ACCOUNT, per_page=50)
    assert [entry["_id"] for entry in page.entries] == [entry_id, old["_id"]]
    assert log_queries(db, recorder) == ["number_counters", "access_log", "access_log"]
    room = await room_activity.latest_entries(db, ROOM, since=written - A_MONTH)
    assert [entry["at"] for entry in room] == [iso_utc(written)]

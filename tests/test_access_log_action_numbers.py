"""The access log of one action (`?action=`) by the entries' numbers per (scope, action): the
rounds give them in the same `$set` as the scopes' numbers (`services.common.log_numbering`),
and a file's, a room's and the account's log of one action read them (`numbered_log`), so a
burst of that action behind the page, or of another action around it, is not walked.

Each test has a database of its own on the test worker's shared SecantusDB
(`tests.worker_database`).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests import log_sizes, recorded_database
from tests.db_reads import QueryRecorder
from tests.log_numbers import (
    ACCOUNT,
    LONG_AGO,
    ROOM,
    console_pages,
    entries,
    file_pages,
    in_order,
    insert,
    number_everything_new,
    numbering_round,
    room_pages,
    walked,
)
from vaultd.db import Db
from vaultd.services.common import access_log, feed, numbered_log
from vaultd.services.rooms import activity as room_activity
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # each test seeds and walks a log of its own: tens of seconds

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test
tenth = log_sizes.tenth  # a round's cap and the page a tenth, for the logs a tenth

BURST = 150  # of each action: 15 rounds' cap and 7 pages, with `tenth`'s round and page
RARE = 4
CONSOLE_PAGE = 5
SLACK = 10  # the counters, the horizon, the one entry past the page and its millisecond


def assert_first_page(page: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """The newest LATEST, and the rest of the last one's millisecond (3 entries a millisecond
    in the burst: the next page asks for entries strictly before it)."""
    assert access_log.LATEST <= len(page) < access_log.LATEST + 3
    assert page == expected[:len(page)]


async def test_a_rare_action_under_a_burst_is_read_by_its_numbers(
        db: Db, recorder: QueryRecorder, tenth: None) -> None:
    """A burst of downloads, then one of pages, then a few downloads spread over a second, ten
    minutes ago: the newest page of downloads (20) reaches into the burst. By time, the window
    that reaches it reads all of it (windows grow eightfold while empty: the one of 4,096 s holds
    all); by number, a page walks about what it returns."""
    file_id, start = str(uuid.uuid4()), utcnow() - timedelta(minutes=10)
    await numbering_round(db, start)  # numbers start before the entries
    await insert(db, [*entries(file_id, "download", start, BURST, 3),
                      *entries(file_id, "page", start + timedelta(seconds=1), BURST, 3),
                      *entries(file_id, "download", start + timedelta(seconds=2), RARE, 1,
                               step=timedelta(milliseconds=250))])
    downloads = {"fileId": file_id, "action": "download"}
    expected = [access_log.entry_json(doc) for doc in await in_order(db, downloads)]

    def read_file() -> object:
        return access_log.latest_for_file(db, file_id, since=LONG_AGO, action="download")

    by_time, walked_by_time = await walked(db, recorder, read_file)  # none numbered yet
    assert_first_page(by_time, expected)
    assert walked_by_time >= BURST, walked_by_time  # the window that reached the burst
    await number_everything_new(db)
    by_number, walked_by_number = await walked(db, recorder, read_file)
    assert_first_page(by_number, expected)
    assert walked_by_number <= 2 * access_log.LATEST + SLACK, walked_by_number
    in_room, walked_in_room = await walked(db, recorder, lambda: room_activity.latest_entries(
        db, ROOM, action="download", since=LONG_AGO))
    assert_first_page(in_room, expected)
    assert walked_in_room <= 2 * access_log.LATEST + SLACK, walked_in_room
    console, walked_console = await walked(db, recorder, lambda: feed.log_page(
        db, ACCOUNT, per_page=CONSOLE_PAGE, action="download"))
    assert [entry["_id"] for entry in console.entries] == [
        doc["_id"] for doc in (await in_order(db, downloads))[:CONSOLE_PAGE]]
    assert walked_console <= 2 * CONSOLE_PAGE + SLACK, walked_console
    # Numbered per (scope, action), dense and in the log's order, beside the scopes' numbers.
    numbered = await in_order(db, downloads)
    for field in ("fileActionSeq", "accountActionSeq", "roomActionSeq"):
        assert [doc[field] for doc in numbered] == list(range(BURST + RARE, 0, -1))
    pages = await in_order(db, {"fileId": file_id, "action": "page"})
    assert [doc["fileActionSeq"] for doc in pages] == list(range(BURST, 0, -1))
    assert [doc["fileSeq"] for doc in await in_order(db, {"fileId": file_id})] == list(
        range(2 * BURST + RARE, 0, -1))
    counter = await db.number_counters.find_one(
        {"_id": numbered_log.FILE_ACTION.counter(file_id, "download")})
    assert counter is not None and counter["seq"] == BURST + RARE


async def test_every_page_of_one_action_across_the_tail_numbers_and_old_part(db: Db) -> None:
    """Pages of every size from 1 end in the tail (no round yet), the numbered part and the
    part older than the first round, each entry once and in order, in all three readers."""
    file_id = str(uuid.uuid4())
    for _ in range(4):  # before the first round: the old part, read by time
        await access_log.record(db, ACCOUNT, file_id, "view", room_id=ROOM)
        await access_log.record(db, ACCOUNT, file_id, "download", room_id=ROOM)
    await numbering_round(db)
    for turn in range(14):
        await access_log.record(db, ACCOUNT, file_id, "view" if turn % 3 else "download",
                                room_id=ROOM)
    await numbering_round(db)
    for _ in range(3):  # the tail
        await access_log.record(db, ACCOUNT, file_id, "view", room_id=ROOM)
    expected = [access_log.entry_json(doc) for doc in
                await in_order(db, {"fileId": file_id, "action": "view"})]
    assert len(expected) == 4 + 9 + 3
    ids = [doc["_id"] for doc in await in_order(db, {"fileId": file_id, "action": "view"})]
    for size in range(1, len(expected) + 2):
        assert await file_pages(db, file_id, size, action="view") == expected, size
        assert await console_pages(db, size, action="view") == ids, size
    assert await room_pages(db, action="view") == expected
    assert await room_pages(db) == [access_log.entry_json(doc) for doc in
                                    await in_order(db, {"roomId": ROOM})]

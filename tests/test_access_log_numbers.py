"""The access log's numbers (`services.common.log_numbering`, `numbered_log`): entries are
numbered after their insert, behind the log fence, and the three whole-log reads (a file's, the
account's in the console, a room's) read the numbered part by number, the newer tail and the
older unnumbered part by time, each entry once and in the log's order wherever a page ends.

Entries are written through `access_log.record` (the fenced one-command insert the page path
uses); a numbering round is what the audit sequencer's round runs: the fence raised to the
horizon, then `number_new_entries` up to it. Each test has a database of its own on the test
worker's shared SecantusDB (`tests.worker_database`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests import log_sizes, recorded_database
from tests.db_reads import QueryRecorder, total_examined
from tests.log_numbers import numbering_round
from vaultd.db import Db
from vaultd.services.common import access_log, feed, log_numbering, numbered_log
from vaultd.services.rooms import activity as room_activity
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # each test seeds and walks a log of its own: tens of seconds

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test
tenth = log_sizes.tenth  # a round's cap and the page a tenth, for the logs a tenth

ACCOUNT, ROOM = "acct-numbers", "room-numbers"
LONG_AGO = datetime(2024, 1, 1).astimezone()


async def write(db: Db, file_id: str, count: int) -> None:
    """`count` downloads of `file_id` logged as the routes log them, read through a room."""
    for _ in range(count):
        await access_log.record(db, ACCOUNT, file_id, "download", ip="203.0.113.5",
                                room_id=ROOM)


async def in_order(db: Db, query: dict[str, Any]) -> list[Any]:
    """Every entry of `query`, newest first in the log's order (time, then id), from the
    database itself."""
    docs = await db.raw(db.access_log.name).find(query).to_list()
    return sorted(docs, key=lambda doc: (doc["at"], doc["_id"]), reverse=True)


async def api_pages(db: Db, file_id: str, count: int) -> list[dict[str, Any]]:
    """The file's whole log through `latest_for_file`, page after page by `before`."""
    shown: list[dict[str, Any]] = []
    before: datetime | None = None
    while True:
        page = await access_log.latest_for_file(db, file_id, since=LONG_AGO, before=before,
                                                count=count)
        shown += page
        if len(page) < count:
            return shown
        before = datetime.fromisoformat(page[-1]["at"])


async def console_pages(db: Db, per_page: int) -> list[dict[str, Any]]:
    """The account's whole log through the console's pages, cursor after cursor."""
    shown: list[dict[str, Any]] = []
    after: feed.Cursor | None = None
    while True:
        page = await feed.log_page(db, ACCOUNT, per_page=per_page, after=after)
        shown += page.entries
        if page.next is None:
            return shown
        after = page.next


async def test_entries_arriving_faster_than_the_rounds_are_each_read_once_in_order(
        db: Db) -> None:
    file_id = str(uuid.uuid4())
    assert await numbering_round(db) == 0  # the first round marks where numbers start
    await write(db, file_id, 30)
    assert await numbering_round(db) == 30
    await write(db, file_id, 25)  # the tail: stamped after the last round's horizon
    expected = await in_order(db, {"fileId": file_id})
    numbered = [doc for doc in expected if "fileSeq" in doc]
    assert len(numbered) == 30 and len(expected) == 55
    # Dense, in the log's order, in each of the entry's scopes.
    for field in ("fileSeq", "accountSeq", "roomSeq"):
        assert [doc[field] for doc in numbered] == list(range(30, 0, -1))
    as_api = [access_log.entry_json(doc) for doc in expected]
    assert await access_log.latest_for_file(db, file_id, since=LONG_AGO) == as_api
    assert await room_activity.latest_entries(db, ROOM, since=LONG_AGO) == as_api
    assert [doc["_id"] for doc in await console_pages(db, 50)] == [
        doc["_id"] for doc in expected]


async def test_before_and_the_cursor_across_the_numbered_and_unnumbered_boundary(
        db: Db) -> None:
    """Every page size from 1 up: a page ends in the tail, on its last entry, inside the
    numbered part, on its first entry, and in the part older than the first round."""
    file_id = str(uuid.uuid4())
    await write(db, file_id, 6)  # before the first round: the old part, read by time
    await numbering_round(db)
    await write(db, file_id, 9)
    await numbering_round(db)
    await write(db, file_id, 5)
    expected = await in_order(db, {"fileId": file_id})
    assert [("fileSeq" in doc) for doc in expected] == [False] * 5 + [True] * 9 + [False] * 6
    counter = await db.number_counters.find_one({"_id": numbered_log.FILE.counter(file_id)})
    assert counter is not None and counter["since"] == expected[13]["at"]
    as_api = [access_log.entry_json(doc) for doc in expected]
    for size in range(1, 22):
        assert await api_pages(db, file_id, size) == as_api, f"pages of {size}"
        shown = await console_pages(db, size)
        assert [doc["_id"] for doc in shown] == [doc["_id"] for doc in expected], size


async def test_a_round_killed_before_it_moved_the_horizon_leaves_no_entry_twice(
        db: Db) -> None:
    file_id = str(uuid.uuid4())
    await numbering_round(db)
    await write(db, file_id, 12)
    await numbering_round(db)
    await write(db, file_id, 8)
    tail = (await in_order(db, {"fileId": file_id}))[:8]
    # A round that raised the file's counter and numbered half of the tail, then died.
    counters = db.number_counters
    await counters.update_one({"_id": numbered_log.FILE.counter(file_id)}, {"$inc": {"seq": 8}})
    for number, doc in enumerate(reversed(tail[4:]), start=13):
        await db.access_log.update_one({"_id": doc["_id"]}, {"$set": {"fileSeq": number}})
    expected = [access_log.entry_json(doc) for doc in await in_order(db, {"fileId": file_id})]
    assert await access_log.latest_for_file(db, file_id, since=LONG_AGO) == expected
    assert await api_pages(db, file_id, 5) == expected
    # The next round numbers the stretch again, above the dead round's numbers.
    assert await numbering_round(db) == 8
    renumbered = await in_order(db, {"fileId": file_id})
    assert [doc["fileSeq"] for doc in renumbered] == [*range(28, 20, -1), *range(12, 0, -1)]
    assert await api_pages(db, file_id, 5) == expected


async def test_a_file_first_numbered_by_a_round_that_died_reads_each_entry_once(db: Db) -> None:
    """The dead round made the file's counter (its `since` past the horizon it did not move)
    and numbered two entries: the file's log is its tail and its older part, each entry once,
    until the next round numbers the tail again."""
    file_id = str(uuid.uuid4())
    await write(db, file_id, 4)
    await numbering_round(db)
    await write(db, file_id, 5)
    tail = (await in_order(db, {"fileId": file_id}))[:5]
    await db.number_counters.insert_one({"_id": numbered_log.FILE.counter(file_id), "seq": 5,
                                         "since": tail[-1]["at"]})
    for number, doc in enumerate(reversed(tail[3:]), start=1):
        await db.access_log.update_one({"_id": doc["_id"]}, {"$set": {"fileSeq": number}})
    expected = [access_log.entry_json(doc) for doc in await in_order(db, {"fileId": file_id})]
    assert len(expected) == 9
    for size in (1, 2, 4, 200):
        assert await api_pages(db, file_id, size) == expected, f"pages of {size}"
    assert await numbering_round(db) == 5
    assert await api_pages(db, file_id, 2) == expected


async def test_a_hot_file_is_read_by_number_and_its_tail_by_time(
        db: Db, recorder: QueryRecorder, tenth: None) -> None:
    """Ten pages' worth of entries (200) within a tenth of a second on one file, numbered over a
    few rounds, then a tail of 15 no round has reached: a page walks its numbered entries and
    the tail, not the burst."""
    file_id = str(uuid.uuid4())
    start = utcnow() - timedelta(seconds=2)
    await numbering_round(db, start)
    hot = 10 * access_log.LATEST
    await db.raw(db.access_log.name).insert_many([
        {"_id": str(uuid.uuid4()), "accountId": ACCOUNT, "fileId": file_id, "roomId": ROOM,
         "action": "page", "page": 1, "at": start + timedelta(milliseconds=place // 3)}
        for place in range(hot)])  # three a millisecond
    first_round = await numbering_round(db)
    assert 0 < first_round <= log_numbering.MAX_PER_ROUND  # a burst takes several rounds
    expected = [access_log.entry_json(doc) for doc in await in_order(db, {"fileId": file_id})]
    assert await api_pages(db, file_id, 70) == expected  # meanwhile, its rest is the tail
    while first_round < hot:
        numbered = await numbering_round(db)
        assert 0 < numbered <= log_numbering.MAX_PER_ROUND
        first_round += numbered

    async def walked(tail: int) -> int:
        with recorder.recorded():
            page = await access_log.latest_for_file(db, file_id, since=LONG_AGO)
        assert len(page) >= access_log.LATEST
        expected = await in_order(db, {"fileId": file_id})
        assert page[:access_log.LATEST] == [access_log.entry_json(doc)
                                            for doc in expected[:access_log.LATEST]]
        assert len(expected) == hot + tail
        return await total_examined(db, list(recorder.queries))

    # The page, the one past it (is it tied?) and its millisecond, the counters.
    assert await walked(0) <= 2 * access_log.LATEST + 10
    await write(db, file_id, 15)
    assert await walked(15) <= 15 + 2 * access_log.LATEST + 10


async def test_a_burst_is_numbered_reading_about_one_rounds_worth_each_round(
        db: Db, recorder: QueryRecorder, tenth: None) -> None:
    """The read of a round walks its whole stretch: after a round that found more than it
    could number, the next stretch is only as long as what it numbered, so a burst of six
    rounds' worth (300) costs each later round about MAX_PER_ROUND entries read, not the
    burst's rest again."""
    file_id, start = str(uuid.uuid4()), utcnow() - timedelta(seconds=3)
    await numbering_round(db, start)
    burst = 6 * log_numbering.MAX_PER_ROUND
    await db.raw(db.access_log.name).insert_many([
        {"_id": str(uuid.uuid4()), "accountId": ACCOUNT, "fileId": file_id, "action": "page",
         "page": 1, "at": start + timedelta(milliseconds=place // 2)} for place in range(burst)])
    walked_per_round: list[int] = []
    numbered = 0
    while numbered < burst:
        with recorder.recorded():
            numbered += await numbering_round(db)
        reads = [query for query in recorder.queries if query.collection == "access_log"]
        walked_per_round.append(await total_examined(db, reads))
    assert walked_per_round[0] == burst  # the first round cannot know the density yet
    assert max(walked_per_round[1:]) <= 2 * log_numbering.MAX_PER_ROUND + 10, walked_per_round
    numbers = sorted(doc["fileSeq"] for doc in await in_order(db, {"fileId": file_id}))
    assert numbers == list(range(1, burst + 1))

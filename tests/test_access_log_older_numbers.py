"""The access log's entries written before numbering existed, numbered once by the walk
(`services.common.older_log_numbering`) in bounded steps going back in time, below 1 in every
scope, so that every read is by number once it is done; the readers return the same entries
in the same order before, during and after it, and a step cut short is taken again.

The log is seeded as an older vaultd wrote it: entries with no numbers, and no counters. Each
test has a database of its own on the test worker's shared SecantusDB
(`tests.worker_database`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from pathlib import Path
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
from vaultd.services.common import access_log, numbered_log, older_log_numbering
from vaultd.services.common.numbered_log import ALL_SCOPES
from vaultd.services.storage import backup
from vaultd.services.storage.backup_manifest import read_docs
from vaultd.timefmt import utcnow

# Each test seeds and walks a log of its own, as many pages as it was at ten times the sizes.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("tenth")]

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test
tenth = log_sizes.tenth  # a round's cap and the page a tenth, for the logs a tenth

BURST = 120
STEP = 30  # entries a step numbers, at most (a round's budget: `tenth`'s cap is 50)
SLACK = 10
# Each log's entries other than the burst: the busy file's views and downloads, the quiet
# file's views, spread over two days.
VIEWS, DOWNLOADS, QUIET = 6, 3, 4
SPREAD = timedelta(minutes=290)


async def older_log(db: Db) -> tuple[str, str]:
    """Two files' logs as an older vaultd wrote them, days ago: a burst of pages on the first
    (in the room too) within a second, views and downloads spread over two days on both; then
    numbering starts, and new entries are numbered by the rounds."""
    busy, quiet = str(uuid.uuid4()), str(uuid.uuid4())
    days_ago = utcnow() - timedelta(days=3)
    await insert(db, [*entries(busy, "page", days_ago + timedelta(days=1), BURST, 4),
                      *entries(busy, "view", days_ago, VIEWS, 1, step=SPREAD),
                      *entries(busy, "download", days_ago + timedelta(hours=5), DOWNLOADS, 1,
                               room=False, step=SPREAD),
                      *entries(quiet, "view", days_ago + timedelta(hours=1), QUIET, 1,
                               step=SPREAD)])
    await numbering_round(db)  # numbers start: what is older was written before them
    for turn in range(12):
        await access_log.record(db, ACCOUNT, busy, "view" if turn % 2 else "page", page=1,
                                room_id=ROOM)
    await number_everything_new(db)
    return busy, quiet


async def every_read(db: Db, busy: str, quiet: str) -> list[Any]:
    """What every reader shows of the log, page after page: the files' logs whole and of one
    action at two page sizes, the room's, the console's (pages of the page, `tenth`'s 20, and
    of 4, 5 and 3)."""
    page = access_log.LATEST
    return [await file_pages(db, busy, page), await file_pages(db, busy, 4),
            await file_pages(db, busy, 5, action="view"),
            await file_pages(db, busy, page, action="page"),
            await file_pages(db, quiet, 3), await room_pages(db),
            await room_pages(db, action="page"), await console_pages(db, 5),
            await console_pages(db, 5, action="download")]


async def walk(db: Db, between: Any = None) -> int:
    """Steps until the walk is done, calling `between()` after each; how many steps."""
    steps = 0
    while not older_log_numbering.done(await db.number_counters.find_one(
            {"_id": numbered_log.HORIZON})):
        assert await older_log_numbering.number_older_entries(db, STEP) <= STEP + 4
        steps += 1
        if between is not None:
            await between()
    return steps


async def assert_numbered_in_order(db: Db, dense: bool) -> None:
    """Every entry has its number in each of its scopes, falling in the log's order from the
    counter's last down to its lowest (`1 - older`), with no gap where `dense`."""
    log = await in_order(db, {})
    for scope in ALL_SCOPES:
        by_key: dict[str, list[int]] = {}
        for doc in log:
            key = scope.key_of(doc)
            if key is not None:
                by_key.setdefault(key, []).append(doc[scope.number])
        for key, numbers in by_key.items():
            counter = await db.number_counters.find_one({"_id": key})
            assert counter is not None
            assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
            top, below = counter.get("seq", 0), counter.get("older", 0)
            assert numbers[0] <= top and numbers[-1] >= 1 - below
            if dense:
                assert numbers == list(range(top, -below, -1)), key


async def test_an_older_log_is_numbered_in_steps_and_read_the_same_throughout(
        db: Db, recorder: QueryRecorder) -> None:
    busy, quiet = await older_log(db)
    expected = await every_read(db, busy, quiet)
    log = await in_order(db, {"fileId": busy})
    assert expected[0] == [access_log.entry_json(doc) for doc in log]
    assert sum(1 for doc in log if "fileSeq" in doc) == 12  # only the new ones

    # A page in the burst: by time, the window that reaches it reads all of it.
    before = datetime.fromisoformat(expected[0][access_log.LATEST]["at"])

    def second_page() -> Any:
        return access_log.latest_for_file(db, busy, since=LONG_AGO, before=before)

    page, walked_by_time = await walked(db, recorder, second_page)
    assert len(page) >= access_log.LATEST and walked_by_time >= BURST, walked_by_time

    async def unchanged() -> None:  # the cheap ones after each step, every one at the end
        assert await file_pages(db, busy, access_log.LATEST) == expected[0]
        assert await console_pages(db, 5, action="download") == expected[-1]

    steps = await walk(db, unchanged)
    assert steps >= (BURST + VIEWS + DOWNLOADS + QUIET) // STEP  # bounded steps
    assert await every_read(db, busy, quiet) == expected
    await assert_numbered_in_order(db, dense=True)
    # Every read is by number now: the page in the burst walks about what it returns.
    again, walked_by_number = await walked(db, recorder, second_page)
    assert again == page
    assert walked_by_number <= 2 * len(page) + SLACK, walked_by_number
    # New entries after the walk are numbered above, and a later start walks nothing.
    await access_log.record(db, ACCOUNT, quiet, "download", room_id=ROOM)
    await number_everything_new(db)
    assert await older_log_numbering.number_older_entries(db, STEP) == 0
    await assert_numbered_in_order(db, dense=True)


async def test_a_step_cut_short_is_taken_again_and_every_read_is_unchanged(db: Db) -> None:
    """A step killed after its numbers and before its last command (the walk's place and the
    scopes' oldest numbered entries) left numbers below every scope's oldest: the reads skip
    them, the next step gives them again (the first ones become gaps); one killed between the
    place and the scopes leaves those entries read by time."""
    busy, quiet = await older_log(db)
    expected = await every_read(db, busy, quiet)
    state = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
    assert state is not None
    window = await in_order(db, {"at": {"$lt": state["actionsFrom"]}})
    assert await older_log_numbering._give(db, window[:10])  # what the dead step wrote
    assert await every_read(db, busy, quiet) == expected
    await older_log_numbering.number_older_entries(db, STEP)  # the same window, again
    assert await every_read(db, busy, quiet) == expected
    # Killed between its place and its scopes: the place moved, no scope's oldest did.
    state = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
    assert state is not None
    older = await in_order(db, {"at": {"$lt": state["back"]}})
    whole = next(end for end in range(5, len(older)) if older[end]["at"] != older[end - 1]["at"])
    await older_log_numbering._give(db, older[:whole])  # a step cuts between milliseconds
    await db.number_counters.update_one({"_id": numbered_log.HORIZON},
                                        {"$set": {"back": older[whole - 1]["at"]}})
    assert await every_read(db, busy, quiet) == expected
    await walk(db)
    assert await every_read(db, busy, quiet) == expected
    await assert_numbered_in_order(db, dense=False)


async def test_a_backup_reads_the_numbering_state_before_the_counters(
        db: Db, tmp_path: Path) -> None:
    """A round or a step between the export of the state and of a counter leaves numbers the
    restored reads take by time (past the exported horizon, below the exported place); the
    other way round they would take none of them: the state goes first, whatever the ids."""
    await numbering_round(db)
    for _ in range(3):
        await access_log.record(db, ACCOUNT, str(uuid.uuid4()), "download", room_id=ROOM)
    await number_everything_new(db)
    path = tmp_path / "number_counters.jsonl"
    count = await backup.export_collection(db.raw("number_counters"), path)
    exported = [doc["_id"] for doc in read_docs(path)]
    assert exported[0] == numbered_log.HORIZON and len(exported) == count
    assert sorted(exported) == sorted(
        [doc["_id"] async for doc in db.number_counters.find({}, {"_id": 1})])
    assert min(exported) < numbered_log.HORIZON  # an account's counter sorts before it

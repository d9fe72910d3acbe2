"""Every listed read costs about what it returns on the burst shape (`tests.scale_shapes`):
BURST records of one kind written within half a minute a month ago, then nothing (an import, a
script's sign-ins, a day's deliveries retried at once). Time windows sized from a rate read the
whole burst once a window reaches it; reads by number, or by a bounded range, read their page.

Each read is called as its route calls it, and every query it sends is replayed as an
`explain` of what the embedded database walks (`tests.db_reads`). A read fails when it walks
more than twice what it returns plus READ_SLACK (its own records: the account, the file, a
counter, a cursor's entry); a deep page returns what precedes it too (it reads its depth,
docs/performance.md). Reads not bounded yet are `xfail(strict=True)`, with the ratio measured.

The records live in a database of their own on the test worker's shared SecantusDB
(`tests.worker_database`): this module starts no server of its own, and its database is
dropped when the module is done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sized
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from tests.scale_shapes import READS, Shape, seed_shape
from vaultd.db import Db
from vaultd.services.common import access_log, feed
from vaultd.services.files import files
from vaultd.services.members import activity, sessions

BURST = 1_000  # a scan of it shows as plainly as one of 10^5 (bench.scale_burst runs those)
READ_SLACK = 10
# A room's links: its analytics sends a query per link, each replayed as two explains here; a
# hundred show the scan as plainly as a thousand, in a tenth of the time.
ROOM_LINKS = 100
recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures


@pytest.fixture(scope="module")
async def seeded(db: Db) -> Shape:
    return await seed_shape(db, BURST, ROOM_LINKS)


async def _walked(db: Db, recorder: QueryRecorder, read: Callable[[], Awaitable[Any]]
                  ) -> tuple[Any, int]:
    """What `read` returns, and the documents its queries made the database walk."""
    with recorder.recorded():
        result = await read()
    return result, await total_examined(db, list(recorder.queries))


async def _bounded(db: Db, recorder: QueryRecorder, read: Callable[[], Awaitable[Any]],
                   returned: Callable[[Any], Sized], *, depth: int = 0) -> Any:
    """Runs `read`, checks it walked at most twice what it returned (and `depth`, the records
    before a deep page), and gives back what it returned."""
    result, walked = await _walked(db, recorder, read)
    count = len(returned(result))
    assert count > 0, "the read returned nothing: the shape was not seeded as it reads"
    assert walked <= 2 * (count + depth) + READ_SLACK, (
        f"walked {walked} documents for {count} returned ({walked / count:.1f}x)")
    return result


async def _read(db: Db, recorder: QueryRecorder, shape: Shape, name: str) -> Any:
    read, returned = READS[name]
    return await _bounded(db, recorder, lambda: read(db, shape), returned)


async def test_the_file_listing_page_one_and_a_deep_page(
        db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    first = await _read(db, recorder, seeded, "files, page 1 (25)")
    assert first["total"] == BURST + 1
    deep = await _bounded(db, recorder, lambda: files.list_files(db, seeded.account_id, 20, 50),
                          lambda page: page["files"], depth=19 * 50)
    assert len(deep["files"]) == 50


async def test_a_files_links(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    page = await _read(db, recorder, seeded, "a file's links, page 1 (20)")
    assert page["total"] == BURST


async def test_a_files_links_by_state(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    page = await _read(db, recorder, seeded, "a file's links by state (20)")
    assert page["total"] == BURST


async def test_a_files_access_log_and_its_next_page(
        db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    first = await _read(db, recorder, seeded, "a file's access log (200)")
    assert len(first) == access_log.LATEST
    assert [e["at"] for e in first] == sorted((e["at"] for e in first), reverse=True)
    before = datetime.fromisoformat(first[-1]["at"])
    second = await _bounded(db, recorder, lambda: access_log.latest_for_file(
        db, seeded.file_id, since=seeded.file_created, before=before), lambda entries: entries)
    assert len(second) == access_log.LATEST and second[0]["at"] < first[-1]["at"]


async def test_the_accounts_access_log_and_its_next_page(
        db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    first = await _read(db, recorder, seeded, "the account's access log (console, 50)")
    assert first.next is not None and len(first.entries) == 50
    second = await _bounded(db, recorder, lambda: feed.log_page(
        db, seeded.account_id, per_page=50, after=first.next), lambda page: page.entries)
    assert first.entries[-1]["accountSeq"] == second.entries[0]["accountSeq"] + 1


async def test_a_links_viewer_sessions(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    shown = await _read(db, recorder, seeded, "a link's viewer sessions (50)")
    assert len(shown) == 50


async def test_the_activity_log_and_its_next_page(
        db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    first = await _read(db, recorder, seeded, "the activity log (50)")
    assert first.next is not None
    after = activity.Cursor.decode(first.next.encode())
    second = await _bounded(db, recorder, lambda: activity.page(db, seeded.account_id,
                                                                 after=after),
                            lambda page: page.entries)
    assert first.entries[-1]["seq"] == second.entries[0]["seq"] + 1


async def test_the_activity_log_of_one_action_and_its_next_page(
        db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    first = await _read(db, recorder, seeded, "the activity log of one action (console, 50)")
    assert first.next is not None
    second = await _bounded(db, recorder, lambda: activity.page(
        db, seeded.account_id, after=first.next, action="key.created"), lambda page: page.entries)
    assert first.entries[-1]["actionSeq"] == second.entries[0]["actionSeq"] + 1


async def test_a_persons_sessions(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    listed = await _read(db, recorder, seeded, "a person's sessions (50)")
    assert len(listed) == sessions.LISTED_SESSIONS


async def test_a_rooms_items(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    await _read(db, recorder, seeded, "a room's items")


async def test_a_rooms_access_log(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    shown = await _read(db, recorder, seeded, "a room's access log (200)")
    assert len(shown) == access_log.LATEST


async def test_a_rooms_links(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    await _read(db, recorder, seeded, "a room's links (its analytics)")


async def test_webhook_messages(db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    await _read(db, recorder, seeded, "an endpoint's deliveries (50)")


async def test_no_listed_read_asks_for_a_second_batch(
        db: Db, recorder: QueryRecorder, seeded: Shape) -> None:
    """A range of numbers comes back in one round trip: the server's first batch of 101
    documents made a log's page of 200 ask a `getMore` more."""
    asked = {}
    for name, (read, _) in READS.items():
        with recorder.recorded():
            await read(db, seeded)
        asked[name] = recorder.more_batches
    assert {name: more for name, more in asked.items() if more} == {}


def test_every_listed_read_is_tested_here() -> None:
    """A read added to `READS` (and so to the bench's table) gets its test in this module."""
    source = Path(__file__).read_text()
    assert [name for name in READS if f'"{name}"' not in source] == []

"""`vault-admin log export` reads an account's log a page at a time (`feed.export`): every entry
once, newest first in the log's order, each read of the database a page's worth however long
the log, before the entries are numbered (as an older vaultd wrote them, ties of one
millisecond included) and after. Against a real SecantusDB, the queries recorded by the driver
and each replayed as what the database walks (`tests.db_reads`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, examined
from tests.log_numbers import (
    ACCOUNT,
    entries,
    in_order,
    insert,
    now_past_the_last_write,
    number_everything_new,
    numbering_round,
)
from vaultd.db import Db
from vaultd.services.common import access_log, feed, numbered_log, older_log_numbering
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

PAGE = 40  # the export's page here: the log holds 30 of them
ENTRIES = 1_200


async def _exported(db: Db, recorder: QueryRecorder) -> tuple[list[dict[str, object]], int]:
    """What the export writes, and the most documents one of its queries made the database
    walk."""
    with recorder.recorded():
        written = [entry async for entry in feed.export(db, ACCOUNT)]
    walks = [await examined(db, query) for query in list(recorder.queries)]
    return written, max(walks)


async def _number_the_older_entries(db: Db) -> None:
    """The older walk's steps (`older_log_numbering`), until it is done."""
    while not older_log_numbering.done(await db.number_counters.find_one(
            {"_id": numbered_log.HORIZON})):
        await older_log_numbering.number_older_entries(db, 500)


async def test_the_export_writes_every_entry_once_reading_a_page_at_a_time(
        db: Db, recorder: QueryRecorder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed, "EXPORT_PAGE", PAGE)
    # Entries as an older vaultd wrote them, unnumbered, three a millisecond: read by time
    # windows, and the window that meets a burst reads it whole (docs/console.md), so only
    # what is written is checked. Then numbers start, a second burst is written and numbered
    # by the rounds, and the older walk numbers the first: read by numbers, a page at a time.
    # A page's cursor falls inside a millisecond's ties.
    older = utcnow() - timedelta(days=2)
    await insert(db, entries("file-export", "page", older, ENTRIES, per_ms=3, room=False))
    for numbered in (False, True):
        if numbered:
            await numbering_round(db)  # numbers start: what is older was written before
            await insert(db, entries("file-export", "view", await now_past_the_last_write(),
                                     ENTRIES, per_ms=3, room=False))
            await number_everything_new(db)
            await _number_the_older_entries(db)
        expected = [access_log.entry_json(doc)
                    for doc in await in_order(db, {"accountId": ACCOUNT})]
        written, longest = await _exported(db, recorder)
        assert written == expected, f"numbered: {numbered}"
    assert len(written) == 2 * ENTRIES
    # A page and its cursor's ties: never the log.
    assert longest <= 2 * PAGE, f"one query walked {longest} of {len(written)}"

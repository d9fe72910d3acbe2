"""`tests.seeded_log`: a year of an account's log seeded as vaultd's rounds leave its own. A
read of its file's log walks about its page, by the entries' numbers; the same year seeded
unnumbered (as a tool writes entries with older times) makes the first read walk all of it,
which is what the isolation measurement had timed (docs/performance-records.md, *The bystander
measured again*). On a database of its own per test on the worker's SecantusDB, the rounds
run by the test as the audit sequencer runs them."""

from __future__ import annotations

from typing import Any

from tests import recorded_database
from tests.db_reads import QueryRecorder, examined
from tests.scale_seed import Seeded, seed_account
from tests.waiting import wait_until_async
from vaultd.db import Db
from vaultd.services.common import access_log, log_fence, numbered_log, older_log_numbering
from vaultd.timefmt import utcnow

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test

ENTRIES = 1000
PAGE = 200  # the API's page of a file's log (`access_log.LATEST`)


async def _rounds_started(db: Db) -> None:
    """The numbering horizon at now and the older entries' walk done, as a running vaultd
    leaves them on an empty log."""
    async def done() -> bool:
        horizon = utcnow()
        await log_fence.raise_horizon(db, "access_log", horizon)
        await older_log_numbering.number_log(db, horizon)
        state: Any = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
        return older_log_numbering.done(state)
    assert await wait_until_async(done, timeout=30, what="the rounds started")


async def _first_read(db: Db, recorder: QueryRecorder, seeded: Seeded
                      ) -> tuple[list[dict[str, Any]], int]:
    """The file's newest page of its log, and the most one query of it walked."""
    file: Any = await db.files.find_one({"_id": seeded.busy_file})
    with recorder.recorded() as queries:
        page = await access_log.latest_for_file(db, seeded.busy_file, since=file["createdAt"])
    walked = [await examined(db, query) for query in list(queries)
              if query.collection == db.access_log.name]
    return page, max(walked)


async def test_a_numbered_year_is_read_by_its_numbers(db: Db, recorder: QueryRecorder) -> None:
    await _rounds_started(db)
    seeded = await seed_account(db, "Numbered Co", files=2, entries=ENTRIES, links=2,
                                numbered=True)
    stored = await db.raw(db.access_log.name).find(
        {"fileId": seeded.busy_file}).sort([("at", 1), ("_id", 1)]).to_list()
    assert [entry["fileSeq"] for entry in stored] == list(range(1, ENTRIES + 1))
    counter: Any = await db.number_counters.find_one(
        {"_id": numbered_log.FILE.counter(seeded.busy_file)})
    assert (counter["seq"], counter["since"]) == (ENTRIES, stored[0]["at"])

    page, most = await _first_read(db, recorder, seeded)
    newest = stored[::-1][:PAGE]
    assert [entry["at"] for entry in page] == [access_log.entry_json(entry)["at"]
                                               for entry in newest]
    assert most <= PAGE + 2, most  # its page, by number, and the one past it


async def test_the_same_year_unnumbered_is_walked_whole_by_the_first_read(
        db: Db, recorder: QueryRecorder) -> None:
    await _rounds_started(db)
    seeded = await seed_account(db, "Imported Co", files=2, entries=ENTRIES, links=2)
    page, most = await _first_read(db, recorder, seeded)
    assert len(page) == PAGE
    assert most >= ENTRIES, most

"""Once the older entries' walk is done, a scope's old part (entries older than its oldest
numbered one) holds only what a tool wrote since with older times, and is read in one range
(`numbered_log.newest_entries`). A tool that inserts many entries there would make every read
of that range walk them all (SecantusDB walks a range whole, whatever the limit): the first
read that finds a page of them marks the log (`numbered_log.OLD_ENTRIES`), and from then on
the old parts are read by windows sized by what they find, so each read walks about what its
page returns. Each read's queries are recorded by the driver's monitoring and replayed as
`explain`s (`tests.db_reads`), on a database of its own per test on the worker's SecantusDB."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from tests import recorded_database
from tests.db_reads import QueryRecorder, examined
from tests.waiting import wait_until_async
from vaultd.db import Db
from vaultd.services.common import access_log, feed, log_fence, numbered_log, older_log_numbering
from vaultd.services.common.feed import Cursor
from vaultd.timefmt import utcnow

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test

ACCOUNT, FILE, OTHER = "acct-old-part", "file-old-part", "acct-other-part"
IMPORTED = 1500  # a tool's import: one entry a minute, going back a day from the numbers
PER_PAGE = 50


async def _walked_and_numbered(db: Db, also: str | None = None) -> dict[str, Any]:
    """The rounds started and the older entries' walk done, then the account's upload entry
    numbered (and `also`'s, another account's), as a running vaultd leaves its log. The
    account's entry."""
    accounts = [ACCOUNT] if also is None else [ACCOUNT, also]

    async def round_done() -> bool:
        horizon = utcnow()
        await log_fence.raise_horizon(db, "access_log", horizon)
        await older_log_numbering.number_log(db, horizon)
        state: Any = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
        entries = [await db.access_log.find_one({"accountId": account}) for account in accounts]
        return older_log_numbering.done(state) and all(
            entry is not None and "accountSeq" in entry for entry in entries)

    for account in accounts:
        await access_log.record(db, account, f"{FILE}-{account}" if also else FILE, "upload")
    assert await wait_until_async(round_done, timeout=30, what="the walk done, the upload numbered")
    entry: Any = await db.raw(db.access_log.name).find_one({"accountId": ACCOUNT})
    return dict(entry)


async def _import_older(db: Db, before: Any) -> list[dict[str, Any]]:
    """IMPORTED entries straight into the database, older than every numbered one, no numbers
    (as a tool writes them); newest first."""
    docs = [{"_id": str(uuid.uuid4()), "accountId": ACCOUNT, "fileId": FILE, "action": "view",
             "at": before - timedelta(minutes=n + 1)} for n in range(IMPORTED)]
    await db.raw(db.access_log.name).insert_many([dict(doc) for doc in docs])
    return docs


async def _page(db: Db, recorder: QueryRecorder, after: Cursor | None
                ) -> tuple[feed.FeedPage, list[int]]:
    """A page of the account's log and what each of its queries of the log walked."""
    with recorder.recorded() as queries:
        page = await feed.log_page(db, ACCOUNT, per_page=PER_PAGE, after=after)
    walked = [await examined(db, query) for query in list(queries)
              if query.collection == db.access_log.name]
    return page, walked


async def test_a_tools_import_below_the_numbers_is_walked_whole_once_then_by_windows(
        db: Db, recorder: QueryRecorder) -> None:
    upload = await _walked_and_numbered(db)
    imported = await _import_older(db, upload["at"])
    expected = [upload["_id"], *(doc["_id"] for doc in imported)]

    first, walked = await _page(db, recorder, None)
    assert [entry["_id"] for entry in first.entries] == expected[:PER_PAGE]
    # The one range below the horizon (the upload's number and the part below it, read
    # together: no more numbered entries than a page) found a page there: that read walked the
    # import whole (the only one that does), and the log is marked.
    assert max(walked) == IMPORTED + 1, walked
    assert numbered_log.OLD_ENTRIES in await _counter(db, ACCOUNT)

    read, after, most = [entry["_id"] for entry in first.entries], first.next, []
    for _ in range(6):
        page, walked = await _page(db, recorder, after)
        read += [entry["_id"] for entry in page.entries]
        most.append(max(walked))
        after = page.next
    assert read == expected[:7 * PER_PAGE]
    # Each page's reads walk about what it returns, never the import.
    assert max(most) <= 2 * PER_PAGE, most

    # A page read again from the top takes windows too.
    again, walked = await _page(db, recorder, None)
    assert [entry["_id"] for entry in again.entries] == expected[:PER_PAGE]
    assert max(walked) <= 2 * PER_PAGE, walked


async def test_an_old_entry_or_two_leave_the_one_range_read(
        db: Db, recorder: QueryRecorder) -> None:
    upload = await _walked_and_numbered(db)
    stray = {"_id": str(uuid.uuid4()), "accountId": ACCOUNT, "fileId": FILE, "action": "view",
             "at": upload["at"] - timedelta(days=400)}
    await db.raw(db.access_log.name).insert_one(dict(stray))
    for _ in range(2):
        page, walked = await _page(db, recorder, None)
        assert [entry["_id"] for entry in page.entries] == [upload["_id"], stray["_id"]]
        # the tail, then the upload's number and back to EPOCH in one range
        assert len(walked) == 2, walked
    assert numbered_log.OLD_ENTRIES not in await _counter(db, ACCOUNT)


async def test_the_mark_is_the_scopes_and_lifts_once_the_import_is_gone(
        db: Db, recorder: QueryRecorder) -> None:
    upload = await _walked_and_numbered(db, also=OTHER)
    imported = await _import_older(db, upload["at"])
    await _page(db, recorder, None)  # walks the import once and marks the account's log
    assert numbered_log.OLD_ENTRIES in await _counter(db, ACCOUNT)

    # Another account's log keeps its one range below its numbers.
    with recorder.recorded() as queries:
        other = await feed.log_page(db, OTHER, per_page=PER_PAGE)
    assert [entry["action"] for entry in other.entries] == ["upload"]
    assert [query.collection for query in queries
            if query.collection == db.access_log.name] == [db.access_log.name] * 2
    assert numbered_log.OLD_ENTRIES not in await _counter(db, OTHER)

    # The import deleted: the marked log's next first page finds its old part empty by
    # windows, and lifts the mark; the page after reads one range below the numbers again.
    await db.raw(db.access_log.name).delete_many({"_id": {"$in": [doc["_id"] for doc in imported]}})
    page, walked = await _page(db, recorder, None)
    assert [entry["_id"] for entry in page.entries] == [upload["_id"]]
    assert len(walked) > 2, walked  # windows growing back to EPOCH, finding nothing
    assert numbered_log.OLD_ENTRIES not in await _counter(db, ACCOUNT)
    page, walked = await _page(db, recorder, None)
    assert [entry["_id"] for entry in page.entries] == [upload["_id"]]
    assert len(walked) == 2, walked


async def _counter(db: Db, account: str) -> dict[str, Any]:
    """The account log's counter (`{}`: none)."""
    found: Any = await db.number_counters.find_one({"_id": numbered_log.ACCOUNT.counter(account)})
    return dict(found or {})

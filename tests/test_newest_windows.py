"""Newest-first reads by time windows (`services.common.newest`) on a real embedded SecantusDB:
the order they return when the windows come back unsorted (ties by `_id`), a burst no window
foresaw, the document after the page, and the access log's per-process hint that lets a poll
of the same log start with one window of the right size."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder
from vaultd.db import Db
from vaultd.services.common import access_log
from vaultd.services.common.newest import SPILL, SPILL_FLOOR, newest
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures


def entry(file_id: str, at: Any, entry_id: str | None = None) -> dict[str, Any]:
    return {"_id": entry_id or str(uuid.uuid4()), "accountId": "acct", "fileId": file_id,
            "action": "page", "at": at, "page": 1}


def expected_order(docs: list[dict[str, Any]]) -> list[str]:
    return [doc["_id"] for doc in sorted(docs, key=lambda d: (d["at"], d["_id"]), reverse=True)]


async def test_a_window_read_unsorted_is_ordered_newest_first_with_ties_by_id(db: Db) -> None:
    file_id, now = str(uuid.uuid4()), utcnow().replace(microsecond=0)
    # 30 entries a minute apart, then 12 sharing one millisecond, inserted in shuffled order.
    docs = [entry(file_id, now - timedelta(minutes=n)) for n in range(1, 31)]
    docs += [entry(file_id, now - timedelta(seconds=30), f"tie-{n:02}") for n in (7, 3, 11, 0,
                                                                                  5, 9, 1, 10,
                                                                                  2, 8, 4, 6)]
    await db.access_log.insert_many(list(reversed(docs)))
    page = await newest(db.access_log, {"fileId": file_id}, "at", count=20,
                             oldest=now - timedelta(days=1), latest=now)
    order = expected_order(docs)
    assert [doc["_id"] for doc in page.docs] == order[:20]
    assert page.following is None or page.following["_id"] == order[20]


async def test_only_the_fields_asked_for_come_back_in_the_same_order(db: Db) -> None:
    file_id, now = str(uuid.uuid4()), utcnow().replace(microsecond=0)
    docs = [{**entry(file_id, now - timedelta(minutes=n)), "renderId": f"{n:012x}"}
            for n in range(1, 6)]
    await db.access_log.insert_many(docs)
    page = await newest(db.access_log, {"fileId": file_id}, "at", count=3,
                        oldest=now - timedelta(days=1), latest=now, fields=("renderId",))
    assert [doc["_id"] for doc in page.docs] == expected_order(docs)[:3]
    assert [sorted(doc) for doc in page.docs] == [["_id", "at", "renderId"]] * 3


async def test_a_burst_larger_than_the_window_foresaw_is_read_sorted_by_the_database(
        db: Db, recorder: QueryRecorder) -> None:
    file_id, now = str(uuid.uuid4()), utcnow()
    wanted = 10
    over_full = max(SPILL * (wanted + 1), SPILL_FLOOR) + 20
    burst = [entry(file_id, now - timedelta(milliseconds=n)) for n in range(over_full)]
    await db.access_log.insert_many(burst)
    with recorder.recorded():
        page = await newest(db.access_log, {"fileId": file_id}, "at", count=wanted,
                                 oldest=now - timedelta(days=1), latest=now)
    order = expected_order(burst)
    assert [doc["_id"] for doc in page.docs] == order[:wanted]
    assert page.following is not None and page.following["_id"] == order[wanted]
    # The capped unsorted read found the window over-full, so it was read again, sorted.
    assert len(recorder.queries) == 2, [query.filter for query in recorder.queries]


async def test_a_poll_of_the_same_log_starts_with_one_window_of_the_right_size(
        db: Db, recorder: QueryRecorder) -> None:
    file_id, now = str(uuid.uuid4()), utcnow()
    since = now - timedelta(days=365)
    # 600 entries spread over the year: the cold walk grows its windows from one second.
    docs = [entry(file_id, now - timedelta(minutes=n * 800 + 1)) for n in range(600)]
    await db.access_log.insert_many(docs)
    access_log.PAGE_SPANS.forget(f"{file_id} ")

    async def read() -> tuple[list[dict[str, Any]], int]:
        with recorder.recorded():
            entries = await access_log.latest_for_file(db, file_id, since=since)
        # The log's own windows (its numbers' counter, read first, is not a window).
        return entries, len([q for q in recorder.queries if q.collection == "access_log"])

    cold, cold_queries = await read()
    warm, warm_queries = await read()
    expected = expected_order(docs)[:access_log.LATEST]
    assert [e["at"] for e in cold] == [e["at"] for e in warm]
    assert len(cold) == access_log.LATEST
    assert [e["at"] for e in warm] == [
        access_log.entry_json(next(d for d in docs if d["_id"] == i))["at"] for i in expected]
    assert cold_queries >= 5, cold_queries
    assert warm_queries == 1, warm_queries

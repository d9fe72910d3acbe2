"""The activity log's pages on a real embedded SecantusDB holding 2x10^4 events of one account
(and another account's beside them), numbered as `activity.record` numbers them: each page
reads about what it returns, however deep the cursor; events written before numbers existed are
numbered once in the order pages had (time, then id), so the cursor neither skips nor repeats
entries sharing a millisecond; a forged cursor is a 400."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import Db
from vaultd.db_indexes import ensure_indexes
from vaultd.errors import InvalidRequest
from vaultd.services.audit import leaves
from vaultd.services.members import activity, activity_numbers, session_numbers, sessions
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

# A page reads at most 2 x its size + 2 entries wherever it starts: 20,000 entries behind the
# cursor show a scan as plainly as 10^5 would, in a fifth of the seeding (the suite's run);
# VAULTD_TEST_ACTIVITY_EVENTS=100000 runs it at the size the docs quote.
EVENTS = int(os.environ.get("VAULTD_TEST_ACTIVITY_EVENTS", "20000"))
DEEP = EVENTS * 9 // 10
COUNTER, CURSOR_ENTRY = 1, 1  # a page reads the account's counter, a cursor its entry

BIG, OTHER = "acct-big", "acct-other"


def event(account_id: str, at: Any, entry_id: str | None = None,
          seq: int | None = None) -> dict[str, Any]:
    doc = {"_id": entry_id or uuid.uuid4().hex, "accountId": account_id, "at": at,
           "actor": {"kind": "key", "id": "key_1", "label": "ci"}, "action": "key.created",
           "target": "key_x"}
    if seq is not None:
        doc["seq"] = seq
    return doc


async def unnumbered(db: Db, account_id: str, docs: list[dict[str, Any]]) -> None:
    """`docs` (no numbers: written before numbers existed) in the log of `account_id`,
    numbered as the start-up numbers them."""
    await db.raw("activity").insert_many(docs)
    await activity_numbers.number_account_activity(db, account_id)


@pytest.fixture(scope="module")
async def seeded(db: Db) -> list[str]:
    """EVENTS events of BIG five minutes apart, and a tenth as many of OTHER among them; the
    ids of BIG's, newest first."""
    now = utcnow()
    step = timedelta(seconds=300)
    docs = [event(BIG, now - step * n, seq=EVENTS - n) for n in range(EVENTS)]
    others = [event(OTHER, now - step * n * 10 - timedelta(seconds=1), seq=EVENTS // 10 - n)
              for n in range(EVENTS // 10)]
    for start in range(0, EVENTS, 10_000):
        await db.raw("activity").insert_many(docs[start:start + 10_000])
    await db.raw("activity").insert_many(others)
    await db.number_counters.insert_many([
        {"_id": activity_numbers.scope(BIG), "seq": EVENTS},
        {"_id": activity_numbers.scope(OTHER), "seq": EVENTS // 10}])
    return [doc["_id"] for doc in docs]


async def read_page(db: Db, recorder: QueryRecorder, account_id: str, per_page: int,
                    after: activity.Cursor | None) -> tuple[activity.Page, int]:
    with recorder.recorded():
        page = await activity.page(db, account_id, per_page=per_page, after=after)
    return page, await total_examined(db, list(recorder.queries))


@pytest.mark.parametrize("per_page", [20, 200])
async def test_pages_read_about_what_they_return_at_any_depth(
        db: Db, recorder: QueryRecorder, seeded: list[str], per_page: int) -> None:
    page, examined = await read_page(db, recorder, BIG, per_page, None)
    assert [doc["_id"] for doc in page.entries] == seeded[:per_page]
    assert per_page <= examined <= 2 * per_page + 2 + COUNTER, examined
    # Deep in the log: start from the cursor of entry DEEP (its time and id).
    deep = seeded[DEEP]
    doc = await db.activity.find_one({"_id": deep})
    assert doc is not None
    page, examined = await read_page(db, recorder, BIG, per_page,
                                     activity.Cursor(doc["at"], doc["_id"]))
    assert [d["_id"] for d in page.entries] == seeded[DEEP + 1:DEEP + 1 + per_page]
    assert per_page <= examined <= 2 * per_page + 2 + COUNTER + CURSOR_ENTRY, examined


async def test_following_the_cursor_walks_a_stretch_in_order(
        db: Db, recorder: QueryRecorder, seeded: list[str]) -> None:
    after, seen, most = None, [], 0
    for _ in range(10):
        page, examined = await read_page(db, recorder, BIG, 100, after)
        seen += [doc["_id"] for doc in page.entries]
        most = max(most, examined)
        assert page.next is not None
        after = activity.Cursor.decode(page.next.encode())
    assert seen == seeded[:1000]
    assert most <= 202 + COUNTER + CURSOR_ENTRY


async def test_entries_sharing_a_millisecond_are_neither_skipped_nor_repeated(db: Db) -> None:
    account_id, at = f"acct-{uuid.uuid4().hex}", utcnow() - timedelta(days=2)
    docs = [event(account_id, at, f"{n:032x}") for n in range(25)]
    docs += [event(account_id, at - timedelta(milliseconds=1 + n)) for n in range(10)]
    docs.append(event(account_id, at + timedelta(seconds=1)))
    await unnumbered(db, account_id, docs)
    expected = [d["_id"] for d in sorted(docs, key=lambda d: (d["at"], d["_id"]), reverse=True)]
    after, seen = None, []
    while True:
        page = await activity.page(db, account_id, per_page=7, after=after)
        assert len(page.entries) <= 7
        seen += [doc["_id"] for doc in page.entries]
        if page.next is None:
            break
        after = page.next
    assert seen == expected


async def test_a_cursor_far_in_the_future_or_the_past_reads_a_page(db: Db) -> None:
    account_id = f"acct-{uuid.uuid4().hex}"
    await unnumbered(db, account_id, [event(account_id, utcnow() - timedelta(days=n))
                                      for n in range(3)])
    future = await activity.page(db, account_id, after=activity.Cursor.decode("90534306045449.ab"))
    assert len(future.entries) == 3
    past = await activity.page(db, account_id, after=activity.Cursor.decode("1.ab"))
    assert past.entries == [] and past.next is None


async def test_the_last_page_has_no_cursor_and_an_empty_log_one_empty_page(db: Db) -> None:
    account_id = f"acct-{uuid.uuid4().hex}"
    assert (await activity.page(db, account_id)).entries == []
    assert (await activity.page(db, account_id)).next is None
    await unnumbered(db, account_id, [event(account_id, utcnow() - timedelta(hours=n))
                                      for n in range(3)])
    page = await activity.page(db, account_id, per_page=3)
    assert len(page.entries) == 3 and page.next is None


# No id; an id that is not hex; a time past the year 9999; a negative time; extra text.
@pytest.mark.parametrize("cursor", ["!!!", "123", "123.", "123.xyz", "9" * 20 + ".ab",
                                    "-5.ab", "12.ab\n", " 12.ab"])
def test_a_forged_cursor_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        activity.Cursor.decode(cursor)
    assert refused.value.message == "cursor is not one this service returned"


@pytest.mark.parametrize(("raw", "message"), [
    ("0", "perPage must be an integer from 1 to 200"),
    ("201", "perPage must be an integer from 1 to 200"),
    ("-1", "perPage must be an integer from 1 to 200"),
    ("ten", "perPage must be an integer from 1 to 200"),
    ("", "perPage must be an integer from 1 to 200"),
    ("\u00b2", "perPage must be an integer from 1 to 200"),
])
def test_a_bad_page_size_is_refused(raw: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        activity.parse_per_page(raw)
    assert refused.value.message == message


async def test_a_cursor_whose_entry_is_gone_reads_on_from_its_time(db: Db) -> None:
    """A cursor naming no entry (deleted since, or typed by hand) goes on below its time: the
    rest of its millisecond (ids below its id), then older entries, each once."""
    account_id = f"acct-{uuid.uuid4().hex}"
    at = activity.Cursor.decode(activity.Cursor(utcnow() - timedelta(days=1), "0").encode()).at
    docs = [event(account_id, at, f"ab{n:030x}") for n in range(6)]
    docs += [event(account_id, at - timedelta(minutes=1 + n)) for n in range(4)]
    docs.append(event(account_id, at + timedelta(minutes=1)))
    await unnumbered(db, account_id, docs)
    expected = [d["_id"] for d in sorted(docs, key=lambda d: (d["at"], d["_id"]), reverse=True)]
    gone = f"ab{3:030x}"
    await db.raw("activity").delete_one({"_id": gone})
    page = await activity.page(db, account_id, after=activity.Cursor(at, gone))
    assert [doc["_id"] for doc in page.entries] == expected[expected.index(gone) + 1:]


async def test_the_writer_numbers_each_event_and_the_audit_leaf_leaves_the_number_out(
        db: Db) -> None:
    account_id = f"acct-{uuid.uuid4().hex}"
    actor = {"kind": "key", "id": "key_1", "label": "ci"}
    for target in ("a", "b", "c"):
        await activity.record_for(db, account_id, actor,  # type: ignore[arg-type]
                                  "key.created", target=target)
    page = await activity.page(db, account_id)
    assert [(doc["target"], doc["seq"]) for doc in page.entries] == [("c", 3), ("b", 2), ("a", 1)]
    leaf = leaves.activity_entry(page.entries[0])  # type: ignore[arg-type]
    assert "seq" not in leaf and leaf["target"] == "c"


async def test_events_and_sessions_written_before_numbers_are_numbered_once_at_start_up(
        db: Db) -> None:
    account_id, email = f"acct-{uuid.uuid4().hex}", f"{uuid.uuid4().hex[:8]}@example.com"
    await db.raw("accounts").insert_one({"_id": account_id, "name": "Before"})
    now = utcnow()
    await db.raw("activity").insert_many([event(account_id, now - timedelta(hours=n))
                                          for n in range(5)])
    await db.raw("member_sessions").insert_many([
        {"_id": uuid.uuid4().hex, "publicId": f"p{n}", "email": email, "method": "code",
         "accountId": None, "memberId": None, "epoch": None, "ip": "203.0.113.7",
         "userAgent": "old", "createdAt": now - timedelta(minutes=n), "lastSeenAt": now,
         "expiresAt": now + timedelta(hours=1)} for n in range(3)])
    for marker in (activity_numbers.ACTIVITY_NUMBER_MIGRATION,
                   session_numbers.SESSION_NUMBER_MIGRATION):
        await db.raw("migrations").delete_one({"_id": marker})
    await ensure_indexes(db)
    page = await activity.page(db, account_id)
    assert [doc["seq"] for doc in page.entries] == [0, -1, -2, -3, -4]
    new = await activity_numbers.next_number(db, account_id)
    assert new == 1  # new events are numbered above the old ones
    signed_in = sessions.SignedIn(key="k", public_id="p", email=email, csrf_token="c",
                                  account_id=None, account=None, member=None)
    listed = await sessions.list_sessions(db, signed_in)
    assert [row["id"] for row in listed] == ["p0", "p1", "p2"]
    # Once: a later start-up leaves the numbers alone.
    await db.raw("activity").insert_one(event(account_id, now - timedelta(days=2)))
    await ensure_indexes(db)
    assert len((await activity.page(db, account_id)).entries) == 5

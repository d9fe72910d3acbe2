"""The activity log of one action (the console's Activity page filtered by it) is read by the
events' numbers among that action, as the unfiltered log by theirs: each event takes both in
the writer, a page reads about what it returns, the cursor neither skips nor repeats, events
written before these numbers are numbered once at start-up below the new ones, and the numbers
stay out of the audit's leaf. Against a real embedded SecantusDB."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import Db
from vaultd.records.members import ActorRecord
from vaultd.services.audit import leaves
from vaultd.services.members import activity, activity_numbers
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

ACTOR: ActorRecord = {"kind": "key", "id": "key_1", "label": "ci"}
OLD_EVENTS = 300  # written before the action numbers: a burst within a second


def new_account() -> str:
    return f"acct-{uuid.uuid4().hex[:12]}"


async def test_each_event_takes_its_number_in_the_account_and_in_its_action(db: Db) -> None:
    account_id = new_account()
    for action in ("key.created", "member.added", "key.created", "key.revoked", "key.created"):
        await activity.record_for(db, account_id, ACTOR, action, target="t")
    numbers = sorted([(doc["seq"], doc["action"], doc["actionSeq"])
                      async for doc in db.activity.find({"accountId": account_id})])
    assert numbers == [(1, "key.created", 1), (2, "member.added", 1), (3, "key.created", 2),
                       (4, "key.revoked", 1), (5, "key.created", 3)]


async def pages(db: Db, account_id: str, action: str, per_page: int
                ) -> list[list[dict[str, Any]]]:
    found, after = [], None
    while True:
        page = await activity.page(db, account_id, per_page=per_page, after=after, action=action)
        found.append(list(page.entries))
        if page.next is None:
            return found
        after = activity.Cursor.decode(page.next.encode())


async def test_old_events_are_numbered_once_below_the_new_and_paged_without_skips(
        db: Db) -> None:
    account_id = new_account()
    await db.raw("accounts").insert_one({"_id": account_id, "name": "Old Co"})
    start = utcnow() - timedelta(days=30)
    old = [{"_id": uuid.uuid4().hex, "accountId": account_id,
            "at": start + timedelta(milliseconds=3 * (place // 4)),  # four to a millisecond
            "actor": dict(ACTOR), "action": "key.created" if place % 3 else "member.added",
            "target": "t", "seq": place + 1} for place in range(OLD_EVENTS)]
    await db.raw("activity").insert_many(old)
    await db.raw("migrations").delete_one({"_id": activity_numbers.ACTION_NUMBER_MIGRATION})
    leaf_before = leaves.activity_entry(old[-1])  # type: ignore[arg-type]
    await activity_numbers.number_actions_once(db)
    stored = await db.activity.find_one({"_id": old[-1]["_id"]})
    assert stored is not None and stored["actionSeq"] <= 0
    assert leaves.activity_entry(stored) == leaf_before  # the number is not in the leaf

    for _ in range(3):
        await activity.record_for(db, account_id, ACTOR, "key.created", target="new")
    shown = await pages(db, account_id, "key.created", per_page=7)
    entries = [entry for page in shown for entry in page]
    expected = sorted((doc for doc in old if doc["action"] == "key.created"),
                      key=lambda doc: (doc["at"], doc["_id"]), reverse=True)
    assert [entry["target"] for entry in entries[:3]] == ["new"] * 3
    assert [entry["_id"] for entry in entries[3:]] == [doc["_id"] for doc in expected]
    assert {entry["action"] for entry in entries} == {"key.created"}
    assert all(len(page) == 7 for page in shown[:-1])


async def test_a_page_of_one_action_reads_what_it_returns(
        db: Db, recorder: QueryRecorder) -> None:
    account_id = new_account()
    for place in range(120):
        await activity.record_for(db, account_id, ACTOR,
                                  "key.created" if place % 10 == 0 else "member.added")
    first = await activity.page(db, account_id, per_page=5, action="key.created")
    assert first.next is not None
    recorder.queries.clear()
    recorder.recording = True
    try:
        second = await activity.page(db, account_id, per_page=5, action="key.created",
                                     after=first.next)
    finally:
        recorder.recording = False
    assert [entry["actionSeq"] for entry in second.entries] == [7, 6, 5, 4, 3]
    walked = await total_examined(db, list(recorder.queries))
    assert walked <= 2 * 6 + 2, f"walked {walked} for a page of 5"


async def test_a_cursor_of_another_action_starts_below_its_time(db: Db) -> None:
    account_id = new_account()
    for action in ("key.created", "key.created", "member.added", "key.created"):
        await activity.record_for(db, account_id, ACTOR, action)
    other = await db.activity.find_one({"accountId": account_id, "action": "member.added"})
    assert other is not None
    page = await activity.page(db, account_id, action="key.created",
                               after=activity.Cursor(other["at"], other["_id"]))
    older = [doc async for doc in db.activity.find({"accountId": account_id,
                                                   "action": "key.created"})
             if (doc["at"], doc["_id"]) < (other["at"], other["_id"])]
    assert sorted(entry["_id"] for entry in page.entries) == sorted(doc["_id"] for doc in older)
    assert [entry["actionSeq"] for entry in page.entries] == sorted(
        (doc["actionSeq"] for doc in older), reverse=True)

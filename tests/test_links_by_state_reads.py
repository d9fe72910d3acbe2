"""A file's links by state read about what a page returns (`services.links.link_states`),
however many links of the other states lie before it: a revoke-all's links, links revoked one
by one, links expired long ago and marked so, and links the clock expired since the last read
(walked once more, then marked in the background). Also: links written before they were listed
are listed once at start-up, and a link spent by its maxOpens is listed expired at once.

Measured on the server's side (`tests.db_reads`): every query the listing sends is replayed as
an `explain` of what the embedded database walks for it. A deep page costs its depth.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests import link_states_helpers, recorded_database
from tests.db_reads import QueryRecorder
from tests.link_clock import set_expiry
from tests.link_states_helpers import STATES, account_with_file, every_page, expected, listed
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import link_counts
from vaultd.services.common import background
from vaultd.services.gates import sessions
from vaultd.services.gates.gated import GatedLink
from vaultd.services.links import link_states, link_states_once, links
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

SLACK = 10  # the file's record, the live count's range (the links expired since its sweep)
# The range that reaches a state's links below the others' may hold this many more than the
# page (`link_states.SPAN`): it was widened while the ranges above came back empty.
REACH = link_states.SPAN
BLOCK = 400  # links of each kind, one after the other by number
REGION = 600  # links revoked by the file's revoke-all


def _link(account_id: str, file_id: str, number: int, expires: datetime,
          **fields: Any) -> dict[str, Any]:
    return {"_id": str(uuid.uuid4()), "hash": digest(new_token()), "accountId": account_id,
            "fileId": file_id, "viewerEmail": "kim@example.com", "viewerName": "Kim",
            "createdAt": utcnow() - timedelta(days=20), "expiresAt": expires,
            "revoked": False, "sessionsOpened": 0, "seq": number, **fields}


async def _seed_hot_file(db: Db, account_id: str, file_id: str) -> None:
    """Numbered oldest first: REGION links of generation 0 that the file's revoke-all took
    (their records not marked yet), then BLOCK expired and marked, BLOCK live of which every
    tenth revoked by itself, BLOCK live: the records and counters the services write."""
    now, later = utcnow(), utcnow() + timedelta(days=30)
    docs = [_link(account_id, file_id, n, later, listed="active") for n in range(1, REGION + 1)]
    first = REGION + 1
    docs += [_link(account_id, file_id, n, now - timedelta(days=10), generation=1,
                   listed="expired") for n in range(first, first + BLOCK)]
    first += BLOCK
    docs += [_link(account_id, file_id, n, later, generation=1, listed="active")
             if (n - first) % 10 else
             _link(account_id, file_id, n, later, generation=1, listed="revoked", revoked=True,
                   countedOut=True) for n in range(first, first + BLOCK)]
    first += BLOCK
    docs += [_link(account_id, file_id, n, later, generation=1, listed="active")
             for n in range(first, first + BLOCK)]
    await db.raw(db.links.name).insert_many(docs)
    await db.files.update_one({"_id": file_id}, {"$set": {
        "linkSeq": len(docs), "linkTotal": len(docs), "linkGeneration": 1,
        "linkRevokedTo": REGION, "linkRevokedCount": REGION, "linkRevokedSince": BLOCK // 10,
        "linkCount": {"live": 2 * BLOCK - BLOCK // 10, "sweptAt": now}}})


async def _half_lapsed(db: Db, account_id: str, file_id: str, count: int
                       ) -> list[dict[str, Any]]:
    """`count` links listed active, every other one's expiry passed an hour ago, and the
    file's counters as the services keep them."""
    now = utcnow()
    docs = [_link(account_id, file_id, n, now - timedelta(hours=1) if n % 2
                  else now + timedelta(days=30), listed="active") for n in range(1, count + 1)]
    await db.raw(db.links.name).insert_many(docs)
    await db.files.update_one({"_id": file_id}, {"$set": {
        "linkSeq": count, "linkTotal": count,
        "linkCount": {"live": count // 2, "sweptAt": now}}})
    return docs


async def _walks(db: Db, recorder: QueryRecorder, account_id: str, file_id: str,
                 want: dict[link_states_helpers.link_listing.State, list[str]], extra: int
                 ) -> None:
    """Page 1 and page 10 (20 a page) of each state hold what they must, walking at most twice
    what they return and what precedes them, one range more (REACH), and `extra` (links lapsed
    since the marking)."""
    for state in STATES:
        for page in (1, 10):
            ids, total, walked = await listed(db, recorder, account_id, file_id, state, page, 20)
            assert (ids, total) == (want[state][(page - 1) * 20:page * 20], len(want[state]))
            assert walked <= 2 * page * 20 + REACH + extra + SLACK, (
                f"{state} page {page}: {walked}")


async def test_each_states_pages_walk_about_what_they_return(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await account_with_file(db, "Hot States Co")
    await _seed_hot_file(db, account.id, file_id)
    want = await expected(db, file_id)
    assert [len(want[state]) for state in STATES] == [760, 400, 640]
    await _walks(db, recorder, account.id, file_id, want, 0)
    # The clock passes the expiry of the 50 newest: walked once more until they are marked.
    newest = want["active"][:50]
    await set_expiry(db, {"_id": {"$in": newest}}, utcnow() - timedelta(milliseconds=1))
    want = await expected(db, file_id)
    assert want["expired"][:50] == newest and len(want["active"]) == 710
    await _walks(db, recorder, account.id, file_id, want, 50)
    await background.settled()
    marked = await db.links.find({"_id": {"$in": newest}}, {"listed": 1}).to_list()
    assert {doc["listed"] for doc in marked} == {"expired"}
    await _walks(db, recorder, account.id, file_id, want, 0)


async def test_links_written_before_states_are_listed_once_at_start_up(
        db: Db, recorder: QueryRecorder) -> None:
    """A file revoked-all before states were kept: its older generation's links (by number,
    up to 10) revoked, and of its current one two revoked by themselves, three expired and one
    spent while still counted live."""
    account, file_id = await account_with_file(db, "Old States Co")
    now, later = utcnow(), utcnow() + timedelta(days=30)
    docs = [_link(account.id, file_id, n, later) for n in range(1, 11)]
    docs[4]["exhausted"] = True
    current = [_link(account.id, file_id, n, later, generation=1) for n in range(11, 21)]
    for doc in current[:2]:
        doc.update(revoked=True, countedOut=True)
    for doc in current[2:5]:
        doc["expiresAt"] = now - timedelta(days=1)
    current[5]["exhausted"] = True
    await db.raw(db.links.name).insert_many(docs + current)
    await db.files.update_one({"_id": file_id}, {"$set": {
        "linkSeq": 20, "linkTotal": 20, "linkGeneration": 1,
        "linkCount": {"live": 8, "sweptAt": now - timedelta(days=2)}}})
    await db.raw("migrations").delete_one({"_id": link_states_once.LINK_STATES_MIGRATION})
    await link_states_once.link_listed_once(db)
    noted = await db.files.find_one({"_id": file_id})
    assert noted is not None
    assert (noted["linkRevokedTo"], noted["linkRevokedCount"], noted["linkRevokedSince"]) == (
        10, 10, 2)
    assert await link_counts.file_live(db, file_id) == 4  # the spent one left the count
    want = await expected(db, file_id)
    assert [len(want[state]) for state in STATES] == [4, 4, 12]
    for state in STATES:
        assert await every_page(db, recorder, account.id, file_id, state, 3) == (
            want[state], len(want[state]))
    # Started again, nothing is listed or counted twice.
    await link_states_once.link_listed_once(db)
    again = await db.files.find_one({"_id": file_id})
    assert again is not None and again["linkRevokedSince"] == 2


async def test_a_link_spent_by_its_max_opens_is_listed_expired_at_once(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await account_with_file(db, "Spent Co")
    request = links.LinkRequest(file_id, "ann@example.com", "Ann", 3600,
                                policy={"maxOpens": 1})
    await links.create_link(db, account, request)
    await links.create_link(db, account, links.LinkRequest(file_id, "bo@example.com", "Bo",
                                                           3600))
    doc = await db.links.find_one({"fileId": file_id, "viewerEmail": "ann@example.com"})
    assert doc is not None
    gated = GatedLink(doc["_id"], "links", account.id, doc["viewerEmail"], doc["viewerName"],
                      doc["expiresAt"], doc.get("policy"), "Spent Co", file_id=file_id)
    await sessions.count_open(db, gated)
    with pytest.raises(NotFound, match=r"^link not found or no longer available$"):
        await sessions.count_open(db, gated)
    assert [await every_page(db, recorder, account.id, file_id, state, 5)
            for state in STATES] == [([d["_id"] for d in await db.links.find(
                {"fileId": file_id, "viewerEmail": "bo@example.com"}).to_list()], 1),
                                     ([doc["_id"]], 1), ([], 0)]
    assert await link_counts.file_live(db, file_id) == 1
    assert await link_counts.account_live(db, account.id) == 1


async def test_an_active_page_among_lapsed_links_asks_at_their_share_and_marks_them(
        db: Db, recorder: QueryRecorder) -> None:
    """Every other link's expiry passed since the last read (still listed active): page 1 of
    the active reads ranges sized for the share still active (two, where asking each round for
    only what was missing took six, halving), and marks the lapsed it walked expired in the
    background, so that the next page 1 does not walk them."""
    account, file_id = await account_with_file(db, "Lapsed Co")
    docs = await _half_lapsed(db, account.id, file_id, 400)
    want = (await expected(db, file_id))["active"]

    def ranges() -> int:
        return sum(query.collection == "links" and "listed" in query.filter
                   for query in recorder.queries)

    ids, total, _ = await listed(db, recorder, account.id, file_id, "active", 1, 20)
    assert (ids, total) == (want[:20], 200)
    assert ranges() == 2
    await background.settled()
    last = max(doc["seq"] for doc in docs if doc["_id"] == ids[-1])
    above = [doc["_id"] for doc in docs if doc["seq"] > last and doc["seq"] % 2]
    marked = await db.links.find({"_id": {"$in": above}}, {"listed": 1}).to_list()
    assert len(marked) == len(above) and {doc["listed"] for doc in marked} == {"expired"}
    ids, total, walked = await listed(db, recorder, account.id, file_id, "active", 1, 20)
    assert (ids, total) == (want[:20], 200)
    assert walked <= 20 + SLACK


async def test_an_active_page_among_sparse_active_links_reads_one_range(
        db: Db, recorder: QueryRecorder) -> None:
    """One link in ten still active, the rest expired and marked: page 1 of the active is one
    range sized by the file's live count over its numbers (widening from the page's 20 numbers
    took three), and no range is wider than SPAN numbers."""
    account, file_id = await account_with_file(db, "Sparse Co")
    now, later = utcnow(), utcnow() + timedelta(days=30)
    docs = [_link(account.id, file_id, n, later, listed="active") if n % 10 == 0 else
            _link(account.id, file_id, n, now - timedelta(days=1), listed="expired")
            for n in range(1, 401)]
    await db.raw(db.links.name).insert_many(docs)
    await db.files.update_one({"_id": file_id}, {"$set": {
        "linkSeq": 400, "linkTotal": 400, "linkCount": {"live": 40, "sweptAt": now}}})
    want = (await expected(db, file_id))["active"]
    ids, total, walked = await listed(db, recorder, account.id, file_id, "active", 1, 20)
    assert (ids, total) == (want[:20], 40)
    spans = [query.filter["seq"] for query in recorder.queries
             if query.collection == "links" and "listed" in query.filter]
    assert len(spans) == 1, spans
    assert all(span["$lte"] - span["$gte"] + 1 <= link_states.SPAN for span in spans), spans
    assert walked <= 2 * 20 + SLACK
    ids, total, _ = await listed(db, recorder, account.id, file_id, "active", 2, 20)
    assert (ids, total) == (want[20:40], 40)


async def test_lapsed_links_found_while_the_file_is_being_marked_are_marked_too(
        db: Db, recorder: QueryRecorder) -> None:
    """An active page marks the lapsed it walked (a few); the expired page, read before that
    marking ends, finds every lapsed link of the file: the marking under way takes those too,
    so none is left listed active once the background work has settled."""
    account, file_id = await account_with_file(db, "Marked Co")
    docs = await _half_lapsed(db, account.id, file_id, 200)
    await listed(db, recorder, account.id, file_id, "active", 1, 20)  # starts the marking
    await listed(db, recorder, account.id, file_id, "expired", 1, 20)  # while it runs
    await background.settled()
    lapsed = [doc["_id"] for doc in docs if doc["seq"] % 2]
    marked = await db.links.find({"_id": {"$in": lapsed}}, {"listed": 1}).to_list()
    assert len(marked) == 100 and {doc["listed"] for doc in marked} == {"expired"}


@pytest.mark.parametrize("state", [None, *STATES])
async def test_a_page_of_no_links_asks_for_no_stats(db: Db, recorder: QueryRecorder,
                                                    state: Any) -> None:
    account, file_id = await account_with_file(db, f"Linkless Co {state}")
    ids, total, _ = await listed(db, recorder, account.id, file_id, state, 1, 20)
    assert (ids, total) == ([], 0)
    asked = {query.collection for query in recorder.queries}
    assert "link_stats" not in asked, asked


async def test_only_the_states_that_need_the_live_count_read_its_range(
        db: Db, recorder: QueryRecorder) -> None:
    """The revoked are the file's counters alone: their page sends no read of the links
    expired since the live count's sweep. The active and the expired need that count (read
    here with the file's bound on its next expiry dropped, as on a record never swept)."""
    account, file_id = await account_with_file(db, "Counted States Co")
    await _seed_hot_file(db, account.id, file_id)
    want = await expected(db, file_id)
    for state in STATES:
        await db.files.update_one({"_id": file_id}, {"$unset": {"linkCount.ahead": ""}})
        ids, total, _ = await listed(db, recorder, account.id, file_id, state, 1, 20)
        assert (ids, total) == (want[state][:20], len(want[state]))
        swept = [query.filter for query in recorder.queries
                 if query.collection == "links"
                 and "$gt" in query.filter.get("expiresAt", {})]  # the sweep's range
        assert bool(swept) == (state != "revoked"), (state, swept)

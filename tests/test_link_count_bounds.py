"""A file's record bounds its next expiry (`services.accounts.link_counts`): a listing of files
with live links reads no link range until one of them may have expired, and the count stays
exact as links are created, shortened, revoked and expire. Against a real embedded SecantusDB,
through the services, with the queries the work sends recorded (`tests.db_reads`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder
from tests.link_clock import set_expiry
from tests.scale_seed import _file
from vaultd.db import Db
from vaultd.secrets import digest
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.files import files
from vaultd.services.links import link_expiry, links
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

HOUR = 3600
DAY = 24 * HOUR


async def _account_with_files(db: Db, name: str, count: int) -> tuple[Account, list[str]]:
    account = await accounts.create_account(db, name, "pro")
    ids = []
    for number in range(1, count + 1):
        doc: dict[str, Any] = _file(account.id, utcnow(), number)
        del doc["linkCount"]  # as an upload writes it: the count appears with the first link
        await db.raw("files").insert_one(doc)
        ids.append(str(doc["_id"]))
    await db.accounts.update_one({"_id": account.id},
                                 {"$inc": {"usage.documents": count, "fileSeq": count}})
    return account, ids


async def _link(db: Db, account: Account, file_id: str, ttl: int) -> str:
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", ttl)
    return (await links.create_link(db, account, request))[0]


async def _counted(db: Db, file_id: str) -> dict[str, Any]:
    doc = await db.files.find_one({"_id": file_id}, {"linkCount": 1})
    assert doc is not None
    return dict(doc["linkCount"])


def _ranges(recorder: QueryRecorder) -> list[dict[str, Any]]:
    """The link ranges read by expiry (a count's sweep) among the recorded queries."""
    return [query.filter for query in recorder.queries
            if query.collection == "links" and "$gt" in query.filter.get("expiresAt", {})]


def _close(one: datetime, other: datetime) -> bool:
    return abs(one - other) < timedelta(seconds=1)  # the database keeps milliseconds


async def test_a_listing_read_again_reads_no_link_range(db: Db, recorder: QueryRecorder
                                                        ) -> None:
    account, ids = await _account_with_files(db, "Bounded Listing Co", 25)
    for file_id in ids:
        await _link(db, account, file_id, 30 * DAY)
    with recorder.recorded():
        first = await files.list_files(db, account.id, 1, 25)
    assert len(_ranges(recorder)) == 25  # each file's first sweep: it sets the bound
    with recorder.recorded():
        again = await files.list_files(db, account.id, 1, 25)
    assert _ranges(recorder) == []
    assert [item["activeLinks"] for item in again["files"]] == [1] * 25 == \
        [item["activeLinks"] for item in first["files"]]


async def test_the_bound_is_the_first_counted_expiry_ahead(db: Db) -> None:
    account, (file_id,) = await _account_with_files(db, "Ahead Co", 1)
    soon = await _link(db, account, file_id, 2 * HOUR)
    await _link(db, account, file_id, 30 * DAY)
    before = utcnow()
    assert await link_counts.file_live(db, file_id) == 2
    counted = await _counted(db, file_id)
    soon_link = await db.links.find_one({"hash": digest(soon)})
    assert soon_link is not None
    assert _close(counted["nextExpiry"], soon_link["expiresAt"])
    assert counted["ahead"] == link_counts.AHEAD.total_seconds()
    # Revoked, the soon link no longer bounds: the next sweep looks past it to the range's end.
    await links.revoke_link(db, account.id, soon)
    await db.files.update_one({"_id": file_id}, {"$unset": {"linkCount.ahead": ""}})
    assert await link_counts.file_live(db, file_id) == 1
    counted = await _counted(db, file_id)
    assert before + link_counts.AHEAD <= counted["nextExpiry"] <= utcnow() + link_counts.AHEAD
    assert counted["ahead"] == 4 * link_counts.AHEAD.total_seconds()  # it found nothing


async def test_a_new_link_and_a_shortened_one_lower_the_bound(db: Db) -> None:
    account, (file_id,) = await _account_with_files(db, "Lowered Co", 1)
    await _link(db, account, file_id, 30 * DAY)
    assert await link_counts.file_live(db, file_id) == 1
    assert (await _counted(db, file_id))["nextExpiry"] > utcnow() + timedelta(hours=23)
    await _link(db, account, file_id, HOUR)
    assert (await _counted(db, file_id))["nextExpiry"] < utcnow() + timedelta(hours=1)

    other, (second,) = await _account_with_files(db, "Shortened Co", 1)
    await _link(db, other, second, 30 * DAY)
    assert await link_counts.file_live(db, second) == 1
    link = await db.links.find_one({"fileId": second})
    assert link is not None
    new_expiry = await link_expiry.extend_by_id(db, other, second, link["_id"],
                                                {"ttlSeconds": 120})
    assert (await _counted(db, second))["nextExpiry"] <= new_expiry


async def test_a_bound_passed_reads_the_range_again_and_counts_the_expired(db: Db) -> None:
    account, (file_id,) = await _account_with_files(db, "Passed Co", 1)
    tokens = [await _link(db, account, file_id, 30 * DAY) for _ in range(3)]
    assert await link_counts.file_live(db, file_id) == 3
    # The link's expiry set back behind the file's back: the bound still holds it live...
    await db.links.update_one({"hash": digest(tokens[0])}, {"$set": {"expiresAt": utcnow()}})
    assert await link_counts.file_live(db, file_id) == 3
    # ...until the bound passes (stood in for by setting it back).
    await db.files.update_one({"_id": file_id},
                              {"$set": {"linkCount.nextExpiry": utcnow() - timedelta(seconds=1)}})
    assert await link_counts.file_live(db, file_id) == 2
    assert await link_counts.file_live(db, file_id) == 2  # subtracted once
    await set_expiry(db, {"hash": digest(tokens[1])}, utcnow())
    assert await link_counts.file_live(db, file_id) == 1


async def test_a_sweep_that_read_before_a_new_link_does_not_raise_the_bound(db: Db) -> None:
    """A sweep writes its bound only if no link was counted or moved since it read the file:
    else the new link, expiring before the sweep's bound, would be counted past its expiry."""
    account, (file_id,) = await _account_with_files(db, "Raced Co", 1)
    await _link(db, account, file_id, 30 * DAY)
    await db.files.update_one({"_id": file_id}, {"$unset": {"linkCount.ahead": ""}})
    stale = await db.files.find_one({"_id": file_id}, {"linkCount": 1, "linkGeneration": 1})
    assert stale is not None
    soon = await _link(db, account, file_id, HOUR)  # between the sweep's read and its write
    assert (await link_counts.files_live(db, [dict(stale)]))[file_id] == 1  # the stale count
    counted = await _counted(db, file_id)
    assert "ahead" not in counted  # the sweep's write did not apply
    assert counted["nextExpiry"] < utcnow() + timedelta(hours=1)
    await set_expiry(db, {"hash": digest(soon)}, utcnow())
    assert await link_counts.file_live(db, file_id) == 1


async def test_a_record_never_bounded_is_read_whatever_a_new_link_lowered(db: Db) -> None:
    """A record swept before bounds existed has a count but no `ahead`: a new link's `$min`
    then writes a `nextExpiry` that says nothing of the older links."""
    account, (file_id,) = await _account_with_files(db, "Older Co", 1)
    old = [await _link(db, account, file_id, 30 * DAY) for _ in range(2)]
    assert await link_counts.file_live(db, file_id) == 2
    await db.files.update_one({"_id": file_id}, {"$unset": {
        "linkCount.ahead": "", "linkCount.nextExpiry": "", "linkCount.moved": ""}})
    await db.links.update_one({"hash": digest(old[0])}, {"$set": {"expiresAt": utcnow()}})
    await _link(db, account, file_id, 30 * DAY)
    assert await link_counts.file_live(db, file_id) == 2  # 3 made, 1 expired
    assert "ahead" in await _counted(db, file_id)  # bounded from now on


def test_the_look_ahead_grows_while_empty_and_shrinks_when_crowded() -> None:
    day = timedelta(days=1)
    assert link_counts._next_ahead(day, 0) == 4 * day
    assert link_counts._next_ahead(link_counts.AHEAD_MOST, 0) == link_counts.AHEAD_MOST
    assert link_counts._next_ahead(day, link_counts.AHEAD_HOLDS) == day
    assert link_counts._next_ahead(day, link_counts.AHEAD_HOLDS + 1) == day / 4
    assert link_counts._next_ahead(link_counts.AHEAD_LEAST, 1000) == link_counts.AHEAD_LEAST


@pytest.mark.parametrize("ttl", [2 * HOUR, 30 * DAY])
async def test_the_count_is_the_same_as_counting_every_link(db: Db, ttl: int) -> None:
    """Links created, revoked and expired in turn: the bounded count is each time what a
    count of the file's live links says."""
    account, (file_id,) = await _account_with_files(db, f"Counted {ttl} Co", 1)
    tokens = [await _link(db, account, file_id, ttl) for _ in range(6)]
    steps = [("revoke", 0), ("expire", 1), ("new", None), ("expire", 2), ("revoke", 3),
             ("new", None), ("expire", 4)]
    for step, index in steps:
        if step == "revoke":
            await links.revoke_link(db, account.id, tokens[index])
        elif step == "expire":
            await set_expiry(db, {"hash": digest(tokens[index])}, utcnow())
        else:
            tokens.append(await _link(db, account, file_id, ttl))
        truth = await db.links.count_documents({"fileId": file_id, "revoked": False,
                                                "expiresAt": {"$gt": utcnow()}})
        assert await link_counts.file_live(db, file_id) == truth, step

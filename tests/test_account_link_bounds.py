"""An account's live-link count keeps a bound on its next expiry, as a file's does
(`services.accounts.link_counts`): an account read again reads no range of its links or room
links; a new link, a new room link and a shortened expiry lower the bound; a sweep that read
the account before a new link does not raise it past that link; and through creations,
revokes and expiries of both kinds the count is what counting every live link says. Against a
real embedded SecantusDB, through the services, the queries recorded by the driver.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tests import recorded_database
from tests.db_reads import QueryRecorder
from tests.link_clock import set_expiry, set_room_expiry
from tests.scale_seed import _file
from vaultd.db import Db
from vaultd.records import RoomDoc
from vaultd.secrets import digest
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.links import link_expiry, links
from vaultd.services.rooms import records, room_links
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

HOUR = 3600
DAY = 24 * HOUR


async def _account(db: Db, name: str) -> tuple[Account, str, RoomDoc]:
    """An account with one file and one room."""
    account = await accounts.create_account(db, name, "business")
    doc: dict[str, Any] = _file(account.id, utcnow(), 1)
    del doc["linkCount"]  # as an upload writes it: the count appears with the first link
    await db.raw("files").insert_one(doc)
    return account, str(doc["_id"]), await records.create_room(db, account, f"{name} room")


async def _link(db: Db, account: Account, file_id: str, ttl: int) -> str:
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", ttl)
    return (await links.create_link(db, account, request))[0]


async def _room_link(db: Db, room: RoomDoc, ttl: int) -> str:
    request = room_links.RoomLinkRequest("lee@example.com", "Lee", ttl, None)
    return (await room_links.create(db, room, request))[0]


async def _bound(db: Db, account_id: str) -> datetime:
    doc = await db.accounts.find_one({"_id": account_id}, {"linkCount": 1})
    assert doc is not None
    bound: datetime = doc["linkCount"]["nextExpiry"]
    return bound


def _ranges(recorder: QueryRecorder) -> list[str]:
    """The collections of the expiry ranges read among the recorded queries."""
    return [query.collection for query in recorder.queries
            if query.collection in ("links", "room_links")
            and "$gt" in query.filter.get("expiresAt", {})]


async def test_an_account_read_again_reads_no_range(db: Db, recorder: QueryRecorder) -> None:
    account, file_id, room = await _account(db, "Bounded Account Co")
    await _link(db, account, file_id, 30 * DAY)
    await _room_link(db, room, 30 * DAY)
    with recorder.recorded():
        assert await link_counts.account_live(db, account.id) == 2
    assert sorted(set(_ranges(recorder))) == ["links", "room_links"]  # the first sweep
    with recorder.recorded():
        assert await link_counts.account_live(db, account.id) == 2
    assert _ranges(recorder) == []


async def test_a_new_link_a_room_link_and_a_shorter_expiry_lower_the_bound(db: Db) -> None:
    account, file_id, room = await _account(db, "Lowered Account Co")
    await _link(db, account, file_id, 30 * DAY)
    assert await link_counts.account_live(db, account.id) == 1
    assert await _bound(db, account.id) > utcnow() + timedelta(hours=23)
    await _link(db, account, file_id, 3 * HOUR)
    assert await _bound(db, account.id) < utcnow() + timedelta(hours=3)
    await _room_link(db, room, 2 * HOUR)
    assert await _bound(db, account.id) < utcnow() + timedelta(hours=2)
    link = await db.links.find_one({"fileId": file_id, "seq": 1})
    assert link is not None
    new_expiry = await link_expiry.extend_by_id(db, account, file_id, link["_id"],
                                                {"ttlSeconds": 120})
    assert await _bound(db, account.id) <= new_expiry


async def test_a_sweep_that_read_before_a_new_room_link_does_not_raise_the_bound(
        db: Db) -> None:
    """The account's sweep writes only if no link was counted or moved since it read the
    account: else the room link, expiring before the sweep's bound, would be counted past its
    expiry."""
    account, file_id, room = await _account(db, "Raced Account Co")
    await _link(db, account, file_id, 30 * DAY)
    await db.accounts.update_one({"_id": account.id}, {"$unset": {"linkCount.ahead": ""}})
    stale = await db.accounts.find_one({"_id": account.id}, {"linkCount": 1})
    assert stale is not None
    soon = await _room_link(db, room, HOUR)  # between the sweep's read and its write
    assert await link_counts._live(db.raw("accounts"), dict(stale), "accountId", db) == 1
    doc = await db.accounts.find_one({"_id": account.id}, {"linkCount": 1})
    assert doc is not None and "ahead" not in doc["linkCount"]  # the sweep did not write
    await set_room_expiry(db, {"hash": digest(soon)}, utcnow())
    assert await link_counts.account_live(db, account.id) == 1


async def test_the_account_count_is_the_same_as_counting_every_link(db: Db) -> None:
    """Links and room links created, revoked and expired in turn: the bounded count is each
    time what a count of the account's live links and room links says."""
    account, file_id, room = await _account(db, "Counted Account Co")
    tokens = [await _link(db, account, file_id, 2 * HOUR) for _ in range(3)]
    room_tokens = [await _room_link(db, room, 30 * DAY) for _ in range(3)]
    steps = [("revoke", 0), ("expire room", 0), ("new room", None), ("expire", 1),
             ("revoke room", 1), ("new", None), ("expire", 2), ("expire room", 2)]
    for step, index in steps:
        if step == "revoke":
            await links.revoke_link(db, account.id, tokens[index])
        elif step == "expire":
            await set_expiry(db, {"hash": digest(tokens[index])}, utcnow())
        elif step == "new":
            tokens.append(await _link(db, account, file_id, 2 * HOUR))
        elif step == "revoke room":
            await room_links.revoke(db, account.id, room_tokens[index])
        elif step == "expire room":
            await set_room_expiry(db, {"hash": digest(room_tokens[index])}, utcnow())
        else:
            room_tokens.append(await _room_link(db, room, 30 * DAY))
        live = {"accountId": account.id, "revoked": False, "expiresAt": {"$gt": utcnow()}}
        truth = (await db.links.count_documents(live)
                 + await db.room_links.count_documents(live))
        assert await link_counts.account_live(db, account.id) == truth, step

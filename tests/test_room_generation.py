"""A room's revoke-all and a room's deletion are each one bounded write, whatever the number of its
links (`services.rooms.room_counts`, `room_deletions`, `links.revoke_jobs` kind `room`): each
sends the same few commands for 20 links as for 1,000, no link of the room is live from its
answer on (by every read of liveness a room's pages and gates use), the counts are exact at once
and stay exact while the links are marked or deleted in the background, links created or
revoked one by one meanwhile are counted once, and work cut short by a crash is finished (or
dropped) by recovery, once. Against a real embedded SecantusDB, through the services."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from tests import link_generation_helpers, recorded_database
from tests.link_generation_helpers import CommandTally, add_file
from tests.room_link_seed import seed_room_items, seed_room_links
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import RoomDoc
from vaultd.secrets import digest
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import background
from vaultd.services.links import revoke_jobs
from vaultd.services.rooms import (
    items,
    page_read,
    reads,
    records,
    room_counts,
    room_deletions,
    room_links,
)
from vaultd.services.rooms.activity import room_links_revoking
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database

# One embedded database for the module, its commands told to the module's own listener.
server, db = recorded_database.server, recorded_database.db
tally, recorder = link_generation_helpers.tally, link_generation_helpers.recorder
OWNER = "vaultd-test"


async def _room(db: Db, links: int = 0, name: str = "Rooms Co") -> tuple[Account, RoomDoc]:
    """A room of a new account with `links` live links; subscribed to `room.revoked`."""
    account = await accounts.create_account(db, name, "business")
    room = await records.create_room(db, account, "Deal room")
    await seed_room_links(db, account.id, room["_id"], links)
    await db.raw("webhook_endpoints").insert_one(
        {"_id": f"ep_{account.id}", "accountId": account.id, "events": ["room.revoked"]})
    return account, await records.get_room(db, account.id, room["_id"])


async def _new_links(db: Db, room: RoomDoc, count: int) -> list[str]:
    request = room_links.RoomLinkRequest("kim@example.com", "Kim", 3600, None)
    return [(await room_links.create(db, room, request))[0] for _ in range(count)]


async def _live_by_truth(db: Db, tokens: list[str]) -> int:
    """How many of these links a room's page or gate would be served for now."""
    live = 0
    for token in tokens:
        try:
            await room_links.find_live(db, token)
        except NotFound:
            continue
        live += 1
    return live


async def _raw_account_live(db: Db, account_id: str) -> int:
    """The stored counter after a sweep (not the clamped read, which hides a double
    subtraction)."""
    await link_counts.account_live(db, account_id)
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    return int(account["linkCount"]["live"])


async def _counting(tally: CommandTally, work: Callable[[], Awaitable[Any]]
                    ) -> tuple[Any, Counter[str]]:
    tally.sent.clear()
    tally.recording = True
    try:
        result = await work()
    finally:
        tally.recording = False  # before the background steps run: those are not the call's
    return result, Counter(tally.sent)


async def _events(db: Db, account_id: str) -> list[tuple[str, str]]:
    return [(message["state"], message["body"]) async for message in
            db.webhook_outbox.find({"accountId": account_id, "type": "room.revoked"})]


async def test_a_rooms_revoke_all_sends_the_same_few_commands_for_20_links_as_for_1000(
        db: Db, tally: CommandTally) -> None:
    (_, small), (account, large) = await _room(db, 20, "Few"), await _room(db, 1000, "Many")
    few_revoked, few = await _counting(tally, lambda: room_links.revoke_all(db, small, OWNER))
    await background.settled()  # its background steps are not the next call's
    revoked, many = await _counting(tally, lambda: room_links.revoke_all(db, large, OWNER))
    assert (few_revoked, revoked) == (20, 1000)
    assert few == many, (few, many)
    assert many["update room_links"] == 0  # no link record is touched by the call itself
    assert sum(many.values()) <= 16, many
    assert (await accounts.usage(db, account.id))["activeLinks"] == 0
    [(state, body)] = await _events(db, account.id)
    assert state == "pending" and '"revoked":1000' in body, body
    await background.settled()
    assert await db.room_links.count_documents({"roomId": large["_id"], "revoked": False}) == 0
    assert await db.room_links.count_documents({"roomId": large["_id"], "countedOut": True}
                                               ) == 1000
    room = await db.raw("rooms").find_one({"_id": large["_id"]})
    assert room is not None and room["linkGeneration"] == 1 and not room.get("linkRevokes")
    assert await db.raw(revoke_jobs.JOBS).count_documents({"roomId": large["_id"]}) == 0
    assert await _raw_account_live(db, account.id) == 0
    assert await room_links.revoke_all(db, large, OWNER) == 0  # nothing left to revoke
    assert len(await _events(db, account.id)) == 1


async def _gone(db: Db, account_id: str, room_id: str) -> dict[str, Any]:
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    return {"links": await db.room_links.count_documents({"roomId": room_id}),
            "items": await db.room_items.count_documents({"roomId": room_id}),
            "record": await db.rooms.find_one({"_id": room_id}) is not None,
            "roomCount": account["roomCount"],
            "pending": account.get(room_deletions.PENDING, [])}


GONE = {"links": 0, "items": 0, "record": False, "roomCount": 0, "pending": []}


async def test_a_rooms_deletion_sends_the_same_few_commands_for_20_links_as_for_1000(
        db: Db, tally: CommandTally) -> None:
    (few_account, small), (account, large) = (await _room(db, 20, "Few"),
                                              await _room(db, 1000, "Many"))
    for owner, room in ((few_account, small), (account, large)):
        await seed_room_items(db, owner.id, room["_id"], 40)
    _, few = await _counting(tally, lambda: room_deletions.delete_room(
        db, few_account.id, small["_id"], OWNER))
    await background.settled()
    _, many = await _counting(tally, lambda: room_deletions.delete_room(
        db, account.id, large["_id"], OWNER))
    assert few == many, (few, many)
    assert many["delete room_links"] == many["delete room_items"] == 0
    assert sum(many.values()) <= 16, many
    assert (await accounts.usage(db, account.id))["activeLinks"] == 0
    with pytest.raises(NotFound, match="room not found"):
        await records.get_room(db, account.id, large["_id"])
    assert (await records.list_rooms(db, account.id, 1, 25))["total"] == 0
    await background.settled()
    assert await _gone(db, account.id, large["_id"]) == GONE
    assert await _raw_account_live(db, account.id) == 0


async def _document_room(db: Db) -> tuple[Account, RoomDoc, str, list[str]]:
    """A room holding one stored file, with three live links made through the service."""
    account, room = await _room(db)
    file_id = await add_file(db, account)
    await items.add_file(db, room, {"fileId": file_id})
    return account, room, file_id, await _new_links(db, room, 3)


async def _refused_everywhere(db: Db, tokens: list[str], file_id: str,
                              kept: Any) -> None:
    """No read of liveness a room uses finds these links live."""
    assert await _live_by_truth(db, tokens) == 0
    for token in tokens:
        with pytest.raises(NotFound):
            await reads.open_document(db, token, file_id)
        together = await page_read.read_together(db, token, file_id)
        assert together.link is not None and not room_links.is_live(together.link)
    assert not await reads.RoomPages(db).still_open(kept)


async def test_no_read_of_liveness_finds_a_revoked_rooms_link_live_before_it_is_marked(
        db: Db) -> None:
    account, room, file_id, tokens = await _document_room(db)
    kept = await reads.open_document(db, tokens[0], file_id)  # as a page holds it
    found = await db.raw("rooms").find_one({"_id": room["_id"]}, room_counts.COUNT_FIELDS)
    assert found is not None
    # What `revoke_all` does before it answers, its background steps held back until below.
    job = await revoke_jobs._start(db, found, account.id, 3, utcnow(), OWNER, revoke_jobs.ROOM,
                                   room_links_revoking)
    assert await revoke_jobs._raise_generation(db, found, job)
    await revoke_jobs.settle(db, job)
    assert await db.room_links.count_documents({"roomId": room["_id"], "revoked": False}) == 3
    await _refused_everywhere(db, tokens, file_id, kept)
    # Revoked one by one now: nothing more leaves the counts, no second event.
    await room_links.revoke(db, account.id, tokens[1])
    assert await _raw_account_live(db, account.id) == 0
    assert [state for state, _ in await _events(db, account.id)] == ["pending"]
    assert await revoke_jobs.mark(db, job) == 3  # the one revoked by itself too: it was
    assert await _raw_account_live(db, account.id) == 0
    assert await room_counts.live(db, room["_id"]) == 0
    # A link made afterwards is of the new generation: live, counted once.
    fresh = await _new_links(db, room, 1)
    assert await _live_by_truth(db, fresh) == 1
    assert await _raw_account_live(db, account.id) == 1
    assert await room_counts.live(db, room["_id"]) == 1


async def test_no_read_of_liveness_finds_a_deleted_rooms_link_live_before_it_is_deleted(
        db: Db) -> None:
    account, room, file_id, tokens = await _document_room(db)
    kept = await reads.open_document(db, tokens[0], file_id)
    # One expired before the deletion (not swept yet): it leaves the count once, by the sweep.
    expired = await _new_links(db, room, 1)
    await db.room_links.update_one({"hash": digest(expired[0])},
                                   {"$set": {"expiresAt": utcnow()}})
    found = dict(await records.get_room(db, account.id, room["_id"]))
    now = utcnow()
    live = await room_counts.live_unswept(db, found, now)
    assert live == 3
    claimed = await room_deletions._claim(db, found, live, now, OWNER)
    assert claimed is not None
    await room_deletions.settle(db, claimed)
    await room_deletions.settle(db, claimed)  # once, however often
    await _refused_everywhere(db, tokens + expired, file_id, kept)
    assert (await accounts.usage(db, account.id))["activeLinks"] == 0
    with pytest.raises(NotFound, match="room not found"):
        await _new_links(db, room, 1)  # a link of a room being deleted is never made
    await room_deletions.clean_up(db, claimed)
    assert await _gone(db, account.id, room["_id"]) == GONE
    assert await _raw_account_live(db, account.id) == 0


async def test_links_made_during_a_rooms_revoke_all_are_counted_once(db: Db) -> None:
    account, room = await _room(db, 5)
    request = room_links.RoomLinkRequest("kim@example.com", "Kim", 3600, None)
    created, revoked = await asyncio.gather(
        asyncio.gather(*(room_links.create(db, room, request) for _ in range(12))),
        room_links.revoke_all(db, room, OWNER))
    await background.settled()
    live = await _live_by_truth(db, [token for token, _ in created])
    assert revoked >= 5 and revoked + live == 5 + 12, (revoked, live)
    assert await _raw_account_live(db, account.id) == live
    assert await room_counts.live(db, room["_id"]) == live


async def test_links_made_during_a_rooms_deletion_are_never_counted(db: Db) -> None:
    account, room = await _room(db, 5)
    request = room_links.RoomLinkRequest("kim@example.com", "Kim", 3600, None)
    results = await asyncio.gather(
        *(room_links.create(db, room, request) for _ in range(12)),
        room_deletions.delete_room(db, account.id, room["_id"], OWNER), return_exceptions=True)
    assert isinstance(results[-1], dict)  # the deletion went through
    refused = [r for r in results[:-1] if isinstance(r, BaseException)]
    assert all(isinstance(r, NotFound) and str(r) == "room not found" for r in refused), refused
    await background.settled()
    assert await _gone(db, account.id, room["_id"]) == GONE
    assert await _raw_account_live(db, account.id) == 0


async def test_items_added_during_a_rooms_deletion_are_never_left_behind(db: Db) -> None:
    account, room = await _room(db, 5)
    results = await asyncio.gather(
        *(items.add_folder(db, room, {"name": f"Folder {n}"}) for n in range(12)),
        room_deletions.delete_room(db, account.id, room["_id"], OWNER), return_exceptions=True)
    assert isinstance(results[-1], dict)  # the deletion went through
    refused = [r for r in results[:-1] if isinstance(r, BaseException)]
    assert all(isinstance(r, NotFound) and str(r) == "room not found" for r in refused), refused
    await background.settled()
    assert await db.room_items.count_documents({"roomId": room["_id"]}) == 0
    # An add whose room was claimed after the add read it: the adder takes its item back.
    _, late = await _room(db, 0, "Late Co")
    await room_deletions.delete_room(db, late["accountId"], late["_id"], OWNER)
    await background.settled()
    with pytest.raises(NotFound, match=r"^room not found$"):
        await items.add_folder(db, late, {"name": "After"})
    assert await db.room_items.count_documents({"roomId": late["_id"]}) == 0


async def test_a_rooms_revoke_all_cut_after_its_raise_is_finished_by_recovery_once(
        db: Db) -> None:
    account, room = await _room(db, revoke_jobs.BATCH + 7)
    found = await db.raw("rooms").find_one({"_id": room["_id"]}, room_counts.COUNT_FIELDS)
    assert found is not None
    live = await room_counts.live_unswept(db, found, utcnow())
    job = await revoke_jobs._start(db, found, account.id, live, utcnow(), "vaultd-gone",
                                   revoke_jobs.ROOM, room_links_revoking)
    assert await revoke_jobs._raise_generation(db, found, job)
    assert [state for state, _ in await _events(db, account.id)] == ["held"]
    alive = {"vaultd-alive"}
    resumed = await asyncio.gather(revoke_jobs.resume_orphaned(db, alive, "vaultd-alive"),
                                   revoke_jobs.resume_orphaned(db, alive, "vaultd-alive"))
    assert sorted(resumed) == [0, 1]
    await background.settled()
    assert await db.room_links.count_documents({"roomId": room["_id"], "revoked": False}) == 0
    assert await db.raw(revoke_jobs.JOBS).count_documents({"roomId": room["_id"]}) == 0
    assert [state for state, _ in await _events(db, account.id)] == ["pending"]
    assert await _raw_account_live(db, account.id) == 0


async def test_a_rooms_revoke_all_cut_before_its_raise_is_dropped_by_recovery(db: Db) -> None:
    account, room = await _room(db, 4)
    found = await db.raw("rooms").find_one({"_id": room["_id"]}, room_counts.COUNT_FIELDS)
    assert found is not None
    await revoke_jobs._start(db, found, account.id, 4, utcnow(), "vaultd-gone",
                             revoke_jobs.ROOM, room_links_revoking)
    assert await revoke_jobs.resume_orphaned(db, {"vaultd-alive"}, "vaultd-alive") == 1
    assert await _events(db, account.id) == []
    assert await db.room_links.count_documents({"roomId": room["_id"], "revoked": False}) == 4
    assert await room_counts.live(db, room["_id"]) == 4
    assert await _raw_account_live(db, account.id) == 4


async def test_a_rooms_deletion_cut_after_its_claim_is_finished_by_recovery_once(
        db: Db) -> None:
    account, room = await _room(db, 30)
    await seed_room_items(db, account.id, room["_id"], 25)
    found = dict(await records.get_room(db, account.id, room["_id"]))
    # One expired a while before the claim, never swept: the resumed sweep takes it once.
    await db.room_links.update_one({"roomId": room["_id"]},
                                   {"$set": {"expiresAt": utcnow() - timedelta(minutes=5)}})
    now = utcnow()
    claimed = await room_deletions._claim(db, found, await room_counts.live_unswept(db, found, now),
                                          now, "vaultd-gone")
    assert claimed is not None and claimed["liveLinksAtDelete"] == 29
    assert await room_deletions.resume_orphaned(db, {"vaultd-gone"}, "vaultd-alive") == 0
    alive = {"vaultd-alive"}
    resumed = await asyncio.gather(room_deletions.resume_orphaned(db, alive, "vaultd-alive"),
                                   room_deletions.resume_orphaned(db, alive, "vaultd-alive"))
    assert sorted(resumed) == [0, 1]
    await background.settled()
    assert await _gone(db, account.id, room["_id"]) == GONE
    assert await _raw_account_live(db, account.id) == 0


async def test_a_room_from_before_the_count_is_counted_once_at_start_up(db: Db) -> None:
    _, room = await _room(db, 6)
    await db.room_links.update_one({"roomId": room["_id"]}, {"$set": {"revoked": True}})
    # As a room written before its links were counted on it: no count, no marker yet.
    await db.raw("rooms").update_one({"_id": room["_id"]}, {"$unset": {"linkCount": ""}})
    await db.raw("migrations").delete_one({"_id": room_counts.ROOM_LINK_COUNT_MIGRATION})
    await room_counts.count_room_links_once(db)
    assert await room_counts.live(db, room["_id"]) == 5
    # Counted on write from now on: the marker keeps a later start-up from counting again.
    await db.raw("rooms").update_one({"_id": room["_id"]}, {"$set": {"linkCount.live": 99}})
    await room_counts.count_room_links_once(db)
    assert await room_counts.live(db, room["_id"]) == 99

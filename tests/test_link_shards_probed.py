"""An account's and a room's expiry ranges are read per shard when probes of two shards show
many (`services.accounts.link_shards.read_probed`): an account's burst of one link each on many
files, and a room's burst, are read a shard at a time by the counts, with the same answers as
one range gives; a range with few reads the probes and one range; links among the 32 shards
of before are seen by the probe among them. Links and room links written before
shards get theirs at start-up, once, where a count can still read them. Against a real embedded
SecantusDB, through the services, with what each query walks measured on the server
(`tests.db_reads`).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, examined
from tests.link_clock import expire_at_once, set_room_expiry
from tests.room_link_seed import seed_room_links
from tests.scale_seed import _file
from vaultd.db import Db
from vaultd.services.accounts import accounts, link_counts, link_shards, link_shards_once
from vaultd.services.accounts.accounts import Account
from vaultd.services.links import links
from vaultd.services.rooms import records, room_counts
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

FILES = 320  # one link each: five a shard
SHARDS = 64  # the test's SHARDS: as 256 do, a range holds a few a shard
ABOVE = 100  # the test's SHARDED_ABOVE: a 320-link burst is more, its probes show it
DAY = 86_400


@pytest.fixture(autouse=True)
def few_a_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link_shards, "SHARDS", SHARDS)
    monkeypatch.setattr(link_shards, "SHARDED_ABOVE", ABOVE)


async def _account_with_files(db: Db, name: str, files: int, shards: int = SHARDS
                              ) -> tuple[Account, list[str]]:
    """An account with `files` files of one link each (all numbered 1 in their file), their ids
    drawn so that the links fall on the shards in turn: as many on each (the ids' own draw left
    a shard here and there with few, and probes landing there read the range whole, as they
    should, where the tests count on the probes finding many). `shards`: the files' (32: files
    uploaded while there were 32)."""
    account = await accounts.create_account(db, name, "business")
    made = []
    for place in range(files):
        doc: dict[str, Any] = _file(account.id, utcnow(), place + 1)
        while link_shards.shard_of(str(doc["_id"]), 1, shards) != place % shards:
            doc = _file(account.id, utcnow(), place + 1)
        del doc["linkCount"]  # as an upload writes it: the count appears with the first link
        doc[link_shards.FLAG] = True if shards == link_shards.OLD_SHARDS else shards
        made.append(doc)
    await db.raw("files").insert_many(made)
    for doc in made:
        await links.create_link(db, account, links.LinkRequest(
            str(doc["_id"]), "viewer@example.com", "Viewer", DAY))
    return account, [str(doc["_id"]) for doc in made]


async def _ranges_walked(db: Db, recorder: QueryRecorder, collection: str, key: str
                         ) -> list[tuple[int | None, int]]:
    """(shard or None, documents walked) of each expiry range on `collection` by `key`."""
    return [(query.filter.get("shard"), await examined(db, query))
            for query in recorder.queries
            if query.collection == collection and key in query.filter
            and "expiresAt" in query.filter]


def _files_read(recorder: QueryRecorder) -> list[int]:
    """How many files each recorded read of files by `_id` asked for."""
    return [len(query.filter["_id"]["$in"]) for query in recorder.queries
            if query.collection == "files" and "$in" in query.filter.get("_id", {})]


def _per_shard(walked: list[tuple[int | None, int]], total: int) -> None:
    """Every shard read once, none in one range, a partition of the `total` walked, none near
    the whole of it (the file offsets spread one link each of many files)."""
    assert sorted(shard for shard, _ in walked if shard is not None) == list(
        range(link_shards.SHARDS)), walked
    assert all(shard is not None for shard, _ in walked), walked
    assert sum(count for _, count in walked) == total
    assert max(count for _, count in walked) <= 3 * math.ceil(total / link_shards.SHARDS), walked


@pytest.mark.parametrize("shards", [SHARDS, 32], ids=["files uploaded now", "files of 32"])
async def test_an_account_burst_across_many_files_is_read_a_shard_at_a_time(
        db: Db, recorder: QueryRecorder, shards: int) -> None:
    account, _ = await _account_with_files(db, "Mailing Co", FILES, shards)
    with recorder.recorded():  # the first sweep: its look ahead holds every link (a day)
        assert await link_counts.account_live(db, account.id) == FILES
    _per_shard(await _ranges_walked(db, recorder, "links", "accountId"), FILES)
    assert _files_read(recorder) == []  # links yet to expire only lower the bound
    await expire_at_once(db, {"accountId": account.id})
    with recorder.recorded():
        assert await link_counts.account_live(db, account.id) == 0
    _per_shard(await _ranges_walked(db, recorder, "links", "accountId"), FILES)
    # The expired links' files, for their generations: a few at a time (an `$in` of thousands
    # was one operation of 600 ms).
    read = _files_read(recorder)
    assert sum(read) == FILES and max(read) <= link_counts.OWNERS_PER_READ, read
    with recorder.recorded():  # swept: what expired is read no more
        assert await link_counts.account_live(db, account.id) == 0
    assert await _ranges_walked(db, recorder, "links", "accountId") == []


async def test_a_range_with_few_reads_the_probes_then_one_range(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_ids = await _account_with_files(db, "Few Co", 40)  # one a shard at most
    await link_counts.account_live(db, account.id)
    await expire_at_once(db, {"fileId": {"$in": file_ids[:2]}})
    with recorder.recorded():
        assert await link_counts.account_live(db, account.id) == 38
    # The sweep's range: the 2 expired and its look ahead, which holds the 38 others (a day):
    # the probes show at most 32 + 32, so the range is read in one.
    walked = await _ranges_walked(db, recorder, "links", "accountId")
    assert len(walked) == 3 and walked[2] == (None, 40), walked
    low, high = walked[0][0], walked[1][0]
    assert low is not None and high is not None and low < link_shards.OLD_SHARDS <= high


async def test_a_room_burst_is_read_a_shard_at_a_time_by_the_room_and_the_account(
        db: Db, recorder: QueryRecorder) -> None:
    account = await accounts.create_account(db, "Room Mailing Co", "business")
    room = await records.create_room(db, account, "Board pack")
    await seed_room_links(db, account.id, room["_id"], FILES)
    # Their shards in turn, as many on each (drawn from their ids, a shard may hold few).
    seeded = [link["_id"] async for link in db.room_links.find({"roomId": room["_id"]})]
    for place, link_id in enumerate(seeded):
        await db.raw("room_links").update_one({"_id": link_id},
                                              {"$set": {"shard": place % SHARDS}})
    assert await room_counts.live(db, room["_id"]) == FILES
    assert await link_counts.account_live(db, account.id) == FILES
    at = utcnow() + timedelta(seconds=0.5)  # after the sweeps above, before the reads below
    await set_room_expiry(db, {"roomId": room["_id"]}, at)
    await asyncio.sleep((at - utcnow()).total_seconds() + 0.05)
    with recorder.recorded():
        assert await room_counts.live(db, room["_id"]) == 0
        assert await link_counts.account_live(db, account.id) == 0
    _per_shard(await _ranges_walked(db, recorder, "room_links", "roomId"), FILES)
    _per_shard(await _ranges_walked(db, recorder, "room_links", "accountId"), FILES)


async def test_links_a_count_can_still_read_get_their_shard_at_start_up_once(db: Db) -> None:
    account, _ = await _account_with_files(db, "Before Co", 3)
    room = await records.create_room(db, account, "Old room")
    await seed_room_links(db, account.id, room["_id"], 5)
    long_ago = utcnow() - timedelta(days=30)
    # One link and one room link expired before the sweeps below: no count reads them again.
    gone = await db.links.find_one({"accountId": account.id}, {"_id": 1})
    gone_room = await db.room_links.find_one({"roomId": room["_id"]}, {"_id": 1})
    assert gone is not None and gone_room is not None
    await db.raw("links").update_one({"_id": gone["_id"]}, {"$set": {"expiresAt": long_ago}})
    await db.raw("room_links").update_one({"_id": gone_room["_id"]},
                                          {"$set": {"expiresAt": long_ago}})
    await room_counts.live(db, room["_id"])
    await link_counts.account_live(db, account.id)
    for name in ("links", "room_links"):  # as a process before shards wrote them
        await db.raw(name).update_many({"accountId": account.id}, {"$unset": {"shard": ""}})
    await db.raw("migrations").delete_one({"_id": link_shards_once.SHARD_MIGRATION})

    await link_shards_once.link_shards_once(db)
    found = {link["_id"]: link async for link in db.links.find({"accountId": account.id})}
    assert "shard" not in found.pop(gone["_id"])
    assert len(found) == 2
    assert all(link["shard"] == link_shards.shard_of(link["fileId"], link["seq"])
               for link in found.values())
    assert all(link["shard"] < SHARDS for link in found.values())
    room_found = {link["_id"]: link async for link in db.room_links.find({"roomId": room["_id"]})}
    assert "shard" not in room_found.pop(gone_room["_id"])
    assert len(room_found) == 4
    assert all(link["shard"] == link_shards.shard_of_id(link["_id"])
               for link in room_found.values())

    # Marked done: a later start-up does not look again.
    await db.raw("links").update_many({"accountId": account.id}, {"$unset": {"shard": ""}})
    await link_shards_once.link_shards_once(db)
    assert await db.links.count_documents({"accountId": account.id,
                                           "shard": {"$exists": True}}) == 0


@pytest.mark.parametrize("shards", [SHARDS, 32])
def test_consecutive_numbers_of_a_file_fall_in_consecutive_shards(shards: int) -> None:
    for file_id in ("f-one", "f-two"):
        found = [link_shards.shard_of(file_id, seq, shards) for seq in range(1, 2 * shards + 1)]
        assert sorted(found) == sorted(list(range(shards)) * 2)
        assert all((after - before) % shards == 1 for before, after in itertools.pairwise(found))
        # Among 32, the shard a link had when there were only 32.
        assert all(link_shards.shard_of(file_id, seq, 32) == shard % 32
                   for seq, shard in enumerate(found, start=1))
    # ...each file starting at its own place, so that one link each of many files spreads.
    firsts = {link_shards.shard_of(f"file-{n}", 1, shards) for n in range(1000)}
    assert len(firsts) == shards


def test_the_probes_tell_links_among_32_from_links_among_all() -> None:
    # 6,400 links among 32 shards (200 each), then 25 a shard among all: both ways the
    # estimate is their count; a mixture its sum.
    among_all = 25 * link_shards.SHARDS
    assert link_shards._estimate(200, 0) == 6_400
    assert link_shards._estimate(25, 25) == among_all
    assert link_shards._estimate(225, 25) == 6_400 + among_all

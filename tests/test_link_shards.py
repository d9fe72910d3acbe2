"""A file with many links reads their expiry ranges per shard (`services.accounts.link_shards`):
a burst of links expiring together is read a shard at a time by the file's count (its look
ahead and its sweep after the expiry) and by its expired page, with the same answers as one
range gives: after two probes on a file uploaded now, each of its 32 on one uploaded while
there were 32. A file uploaded before shards, a small file, a range the probes show small and
an expired page that can hold few links read one range. Against a real embedded SecantusDB,
through the services, with what each query walks measured on the server (`tests.db_reads`);
the upload's flag through the API.
"""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests import recorded_database
from tests.db_commands import CommandCounter
from tests.db_reads import QueryRecorder, examined
from tests.http_helpers import upload_ok
from tests.link_clock import expire_at_once
from tests.scale_seed import _file
from tests.vault_process import VaultProcess
from vaultd.db import Db
from vaultd.services.accounts import accounts, link_counts, link_shards
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import background
from vaultd.services.links import link_states, links
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

LINKS = 320  # ten a shard of 32, five of the test's 64
ABOVE = 100  # the test's SHARDED_ABOVE: 320 links make a file with many
SHARDS = 64  # the test's SHARDS: as 256 do, a range holds a few a shard
DAY = 86_400


@pytest.fixture(autouse=True)
def many_above(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link_shards, "SHARDED_ABOVE", ABOVE)
    monkeypatch.setattr(link_shards, "SHARDS", SHARDS)


async def _file_with_links(db: Db, name: str, count: int, *, shards: bool | int
                           ) -> tuple[Account, str]:
    """An account with a file of `count` links: uploaded now (`shards` SHARDS), while there were
    32 (True), or before shards (False)."""
    account = await accounts.create_account(db, name, "pro")
    doc: dict[str, Any] = _file(account.id, utcnow(), 1)
    del doc["linkCount"]  # as an upload writes it: the count appears with the first link
    if shards:
        doc[link_shards.FLAG] = shards
    await db.raw("files").insert_one(doc)
    for n in range(count):
        await links.create_link(db, account, links.LinkRequest(
            str(doc["_id"]), f"viewer{n}@example.com", "Viewer", DAY))
    return account, str(doc["_id"])


def _link_ranges(recorder: QueryRecorder) -> list[dict[str, Any]]:
    return [query.filter for query in recorder.queries
            if query.collection == "links" and "expiresAt" in query.filter]


async def _walked(db: Db, recorder: QueryRecorder) -> list[int]:
    """What each link range recorded made the server walk."""
    return [await examined(db, query) for query in recorder.queries
            if query.collection == "links" and "expiresAt" in query.filter]


async def _expired_page(db: Db, file_id: str) -> tuple[int, int]:
    file = await db.files.find_one({"_id": file_id})
    assert file is not None
    page, total = await link_states.page_of(db, file, "expired", 1, 20)
    return len(page), total


@pytest.mark.parametrize("flag", [SHARDS, True], ids=["uploaded now", "while there were 32"])
async def test_a_burst_expiring_together_is_read_a_shard_at_a_time(
        db: Db, recorder: QueryRecorder, flag: int | bool) -> None:
    _, file_id = await _file_with_links(db, "Shards Co", LINKS, shards=flag)
    shards = link_shards.OLD_SHARDS if flag is True else SHARDS
    most = math.ceil(LINKS / shards)
    with recorder.recorded():  # the look ahead: every link expires within its day
        assert await link_counts.file_live(db, file_id) == LINKS
    _each_shard_once(_link_ranges(recorder), shards)
    walked = await _walked(db, recorder)
    assert sum(walked) == LINKS and max(walked) <= most, walked

    await expire_at_once(db, {"fileId": file_id})
    with recorder.recorded():
        assert await link_counts.file_live(db, file_id) == 0
    walked = await _walked(db, recorder)
    assert len(walked) == shards and sum(walked) == LINKS and max(walked) <= most

    with recorder.recorded():
        assert await _expired_page(db, file_id) == (20, LINKS)
    lapsed = [query for query in _link_ranges(recorder) if query.get("listed") == "active"]
    _each_shard_once(lapsed, shards)
    # Replayed while the page's marking lists them expired: no more than a shard each.
    walked = await _walked(db, recorder)
    assert len(walked) == shards and max(walked) <= most, walked
    await background.settled()
    assert await db.links.count_documents({"fileId": file_id, "listed": "expired"}) == LINKS


def _each_shard_once(ranges: list[dict[str, Any]], shards: int) -> None:
    """Every shard read once, in order but for the two probes first where there are SHARDS."""
    read = [query["shard"] for query in ranges]
    assert sorted(read) == list(range(shards)), read
    if shards == link_shards.OLD_SHARDS:
        assert read == list(range(shards))
    else:  # one probe among the first 32, one among the rest
        assert read[0] < link_shards.OLD_SHARDS <= read[1], read


async def test_a_range_the_probes_show_small_is_read_in_one(
        db: Db, recorder: QueryRecorder) -> None:
    _, file_id = await _file_with_links(db, "Probed Co", LINKS, shards=SHARDS)
    await link_counts.file_live(db, file_id)  # swept: its look ahead holds every link (a day)
    few = [link["_id"] async for link in db.links.find({"fileId": file_id, "seq": {"$lte": 8}})]
    await expire_at_once(db, {"_id": {"$in": few}})
    with recorder.recorded():
        assert await link_counts.file_live(db, file_id) == LINKS - len(few)
    ranges = _link_ranges(recorder)
    # Two probes (8 links make at most one a shard), then the range in one read.
    assert [("shard" in query) for query in ranges] == [True, True, False], ranges
    assert (await _walked(db, recorder))[2] == len(few)


async def test_a_file_uploaded_before_shards_reads_one_range_with_the_same_answers(
        db: Db, recorder: QueryRecorder) -> None:
    _, file_id = await _file_with_links(db, "Unsharded Co", LINKS, shards=False)
    await link_counts.file_live(db, file_id)
    await expire_at_once(db, {"fileId": file_id})
    with recorder.recorded():
        assert await link_counts.file_live(db, file_id) == 0
        assert await _expired_page(db, file_id) == (20, LINKS)
    ranges = _link_ranges(recorder)
    assert len(ranges) == 2 and not any("shard" in query for query in ranges)
    await background.settled()  # the page's marking, before its range is replayed
    # The count's range walks every link; the page's, replayed once all are marked, none.
    assert await _walked(db, recorder) == [LINKS, 0]


async def test_a_small_file_and_a_page_that_can_hold_few_read_one_range(
        db: Db, recorder: QueryRecorder) -> None:
    _, small = await _file_with_links(db, "Small Co", ABOVE, shards=SHARDS)
    with recorder.recorded():
        assert await link_counts.file_live(db, small) == ABOVE
    assert len(_link_ranges(recorder)) == 1
    # A file with many links, of which few expired: its expired page's range can hold few.
    _, big = await _file_with_links(db, "Few Expired Co", LINKS, shards=SHARDS)
    one = await db.links.find_one({"fileId": big, "seq": 7}, {"_id": 1})
    assert one is not None
    await link_counts.file_live(db, big)
    await expire_at_once(db, {"_id": one["_id"]})
    with recorder.recorded():
        assert await _expired_page(db, big) == (1, 1)
    lapsed = [query for query in _link_ranges(recorder) if query.get("listed") == "active"]
    assert len(lapsed) == 1 and "shard" not in lapsed[0]
    await background.settled()


@pytest.mark.parametrize("flag", [SHARDS, True], ids=["uploaded now", "while there were 32"])
async def test_each_link_carries_its_numbers_shard(db: Db, flag: int | bool) -> None:
    _, file_id = await _file_with_links(db, "Numbers Co", 40, shards=flag)
    found = [(link["seq"], link["shard"]) async for link in db.links.find({"fileId": file_id})]
    assert len(found) == 40
    shards = link_shards.OLD_SHARDS if flag is True else SHARDS
    assert all(shard == link_shards.shard_of(file_id, seq, shards) for seq, shard in found)
    assert {shard for _, shard in found} == {link_shards.shard_of(file_id, seq, shards)
                                            for seq in range(1, 41)}
    # A file of 32 keeps its links among them: its reads are a partition of 32.
    assert max(shard for _, shard in found) < shards


def test_an_uploaded_file_has_shards(vault: VaultProcess, api: httpx.Client,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the module's SHARDS: the vault may run in this process
    file_id = upload_ok(api, docs.pdf(pages=1))["id"]
    counter = CommandCounter.of_vault(vault)
    try:
        record = counter.client[counter.database].files.find_one({"_id": file_id})
    finally:
        counter.close()
    assert record is not None and record[link_shards.FLAG] == 256

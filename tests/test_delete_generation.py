"""A file's deletion is one bounded write, whatever the number of its links
(`services.files.deletions`): it sends the same few commands for 20 links as for 1,000, no link
of the file is live from its answer on (by every read of liveness the page path uses), the
usage and live counts are exact at once and stay exact while the links are deleted in the
background, a link being created during it is never counted, and a deletion whose owner died
is taken over by recovery once. Against a real embedded SecantusDB, through the services."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from backends.local import LocalBackend
from tests import link_generation_helpers, recorded_database
from tests.link_clock import set_expiry
from tests.link_generation_helpers import (
    CommandTally,
    account_with_file,
    add_file,
    live_by_truth,
    new_links,
)
from tests.scale_seed import Seeded, seed_account
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import FileDoc
from vaultd.secrets import digest
from vaultd.services.accounts import accounts, api_keys, link_counts
from vaultd.services.accounts.link_generations import FILE_FIELDS
from vaultd.services.common import background
from vaultd.services.files import deletions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.links import links
from vaultd.services.links.link_records import LinkRecords
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database


# One embedded database for the module, its commands told to the module's own listener.
server, db = recorded_database.server, recorded_database.db
tally, recorder = link_generation_helpers.tally, link_generation_helpers.recorder


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    return BlobStore(LocalBackend(tmp_path / "blobs"), MasterKeyring.generate())


async def _delete_counting(db: Db, store: BlobStore, tally: CommandTally,
                           seeded: Seeded) -> Counter[str]:
    tally.sent.clear()
    tally.recording = True
    try:
        await deletions.delete_file(db, store, seeded.account_id, seeded.busy_file,
                                    owner="vaultd-test")
    finally:
        tally.recording = False  # before the background steps run: those are not the call's
    return Counter(tally.sent)


async def _raw_account_live(db: Db, account_id: str) -> int:
    """The stored counter after a sweep (not the clamped read, which hides a double
    subtraction)."""
    await link_counts.account_live(db, account_id)
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    return int(account["linkCount"]["live"])


async def _gone(db: Db, account_id: str, file_id: str) -> dict[str, Any]:
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None
    return {"links": await db.links.count_documents({"fileId": file_id}),
            "stats": await db.link_stats.count_documents({"fileId": file_id}),
            "record": await db.files.find_one({"_id": file_id}) is not None,
            "pending": file_id in account.get("pendingDeletes", []),
            "entries": await db.access_log.count_documents({"fileId": file_id,
                                                            "action": "delete"}),
            "events": await db.webhook_outbox.count_documents({"accountId": account_id,
                                                              "type": "file.deleted"})}


async def _subscribed(db: Db, account_id: str) -> None:
    """An endpoint of the account that takes `file.deleted` (only what `outbox.emit` reads)."""
    await db.raw("webhook_endpoints").insert_one(
        {"_id": f"ep_{account_id}", "accountId": account_id, "events": ["file.deleted"]})


GONE = {"links": 0, "stats": 0, "record": False, "pending": False, "entries": 1, "events": 1}


async def test_a_delete_sends_the_same_few_commands_for_20_links_as_for_1000(
        db: Db, tally: CommandTally, store: BlobStore) -> None:
    small = await seed_account(db, "Few Deleted", files=1, entries=0, links=20)
    large = await seed_account(db, "Many Deleted", files=1, entries=0, links=1000)
    for seeded in (small, large):
        await _subscribed(db, seeded.account_id)
    few = await _delete_counting(db, store, tally, small)
    await background.settled()  # its background steps are not the next call's
    many = await _delete_counting(db, store, tally, large)
    assert few == many, (few, many)
    assert many["delete links"] == 0  # no link record is touched by the call itself
    assert sum(many.values()) <= 16, many
    assert (await accounts.usage(db, large.account_id))["activeLinks"] == 0
    await background.settled()
    assert await _gone(db, large.account_id, large.busy_file) == GONE
    assert await _raw_account_live(db, large.account_id) == 0


async def test_no_read_of_liveness_finds_a_deleted_files_link_live(
        db: Db, store: BlobStore) -> None:
    account, file_id = await account_with_file(db)
    await _subscribed(db, account.id)
    kept_file = await add_file(db, account)
    await new_links(db, account, kept_file, 3)
    tokens = await new_links(db, account, file_id, 2 * deletions.DELETE_BATCH + 5)
    # One expired before the deletion (not swept yet), one revoked by itself before it.
    await set_expiry(db, {"hash": digest(tokens[0])}, utcnow())
    await links.revoke_link(db, account.id, tokens[1])
    await db.raw("link_stats").insert_many(
        [{"_id": f"{file_id}-stats-{n}", "fileId": file_id} for n in range(30)])
    _, key = await api_keys.create_key(db, account.id)
    records = LinkRecords()
    kept = await records.open(db, tokens[2])  # as the page path keeps it for a second
    # What `delete_file` does before it answers, its background steps held back until below.
    doc = await _claimed_by(db, account.id, file_id, "vaultd-test")
    await deletions.settle(db, store, doc)
    assert await db.links.count_documents({"fileId": file_id}) == len(tokens)
    assert await live_by_truth(db, tokens) == 0
    for token in tokens[2:5]:
        with pytest.raises(NotFound):
            await records.open(db, token)
    with pytest.raises(NotFound):
        await records.confirm(db, kept)
    check = await api_keys.check_key(db, key, with_link=kept.link["_id"])
    assert check.link is None or not links.is_live(check.link)
    assert not await links.still_open(db, kept)
    # A link live at the deletion expires before its record goes: not taken twice.
    await set_expiry(db, {"hash": digest(tokens[3])}, utcnow())
    assert await _raw_account_live(db, account.id) == 3
    await deletions.clean_up(db, doc)
    assert await _gone(db, account.id, file_id) == GONE
    assert await _raw_account_live(db, account.id) == 3
    usage = await accounts.usage(db, account.id)
    assert (usage["documents"], usage["activeLinks"]) == (1, 3)


async def test_links_made_during_a_delete_are_never_counted(db: Db, store: BlobStore) -> None:
    account, file_id = await account_with_file(db)
    await _subscribed(db, account.id)
    await new_links(db, account, file_id, 5)
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", 3600)
    results = await asyncio.gather(
        *(links.create_link(db, account, request) for _ in range(12)),
        deletions.delete_file(db, store, account.id, file_id, owner="vaultd-test"),
        return_exceptions=True)
    assert results[-1] is None  # the deletion went through
    refused = [r for r in results[:-1] if isinstance(r, BaseException)]
    assert all(isinstance(r, NotFound) for r in refused), refused
    await background.settled()
    assert await _raw_account_live(db, account.id) == 0
    assert await _gone(db, account.id, file_id) == GONE


async def test_a_second_delete_of_the_same_file_is_not_found(db: Db, store: BlobStore) -> None:
    account, file_id = await account_with_file(db)
    await _subscribed(db, account.id)
    await new_links(db, account, file_id, 3)
    outcomes = await asyncio.gather(
        *(deletions.delete_file(db, store, account.id, file_id, owner="vaultd-test")
          for _ in range(3)), return_exceptions=True)
    assert sorted(type(outcome).__name__ for outcome in outcomes) == [
        "NoneType", "NotFound", "NotFound"]
    assert all(str(o) == "file not found" for o in outcomes if isinstance(o, NotFound))
    await background.settled()
    assert await _gone(db, account.id, file_id) == GONE
    assert (await accounts.usage(db, account.id))["documents"] == 0


async def _claimed_by(db: Db, account_id: str, file_id: str, owner: str) -> FileDoc:
    """The deletion's one write, as `delete_file` makes it: what its owner left if it stopped
    right after."""
    fields = await db.files.find_one({"_id": file_id}, {"linkCount": 1, **FILE_FIELDS})
    assert fields is not None
    now = utcnow()
    live = await link_counts.file_live_unswept(db, dict(fields), now)
    claimed = await deletions._claim(db, dict(fields), live, now, owner)
    assert claimed is not None and claimed["accountId"] == account_id
    return claimed


async def test_a_delete_cut_after_its_claim_is_finished_by_recovery_once(
        db: Db, store: BlobStore) -> None:
    account, file_id = await account_with_file(db)
    await _subscribed(db, account.id)
    await db.accounts.update_one({"_id": account.id}, {"$inc": {"usage.storageBytes": 1000}})
    tokens = await new_links(db, account, file_id, deletions.DELETE_BATCH + 7)
    await _claimed_by(db, account.id, file_id, "vaultd-gone")
    assert await live_by_truth(db, tokens) == 0
    # An owner still alive keeps its deletion.
    assert await deletions.resume_orphaned(db, store, {"vaultd-gone"}, "vaultd-alive",
                                           utcnow()) == 0
    alive = {"vaultd-alive"}
    resumed = await asyncio.gather(
        deletions.resume_orphaned(db, store, alive, "vaultd-alive", utcnow()),
        deletions.resume_orphaned(db, store, alive, "vaultd-alive", utcnow()))
    assert sorted(resumed) == [0, 1]
    await background.settled()
    assert await _gone(db, account.id, file_id) == GONE
    assert await _raw_account_live(db, account.id) == 0
    usage = await accounts.usage(db, account.id)
    assert (usage["documents"], usage["storageBytes"], usage["activeLinks"]) == (0, 0, 0)


async def test_a_delete_this_process_stopped_cleaning_up_is_taken_by_its_own_recovery(
        db: Db, store: BlobStore) -> None:
    account, file_id = await account_with_file(db)
    await _subscribed(db, account.id)
    await new_links(db, account, file_id, deletions.DELETE_BATCH + 3)
    # Claimed by this very instance, whose clean-up then stopped (a database error).
    await _claimed_by(db, account.id, file_id, "vaultd-me")
    # Two recoveries of this process at once: one takes it over, the other leaves it alone.
    resumed = await asyncio.gather(
        deletions.resume_orphaned(db, store, {"vaultd-me"}, "vaultd-me", utcnow()),
        deletions.resume_orphaned(db, store, {"vaultd-me"}, "vaultd-me", utcnow()))
    assert sorted(resumed) == [0, 1]
    await background.settled()
    assert await _gone(db, account.id, file_id) == GONE
    assert await _raw_account_live(db, account.id) == 0


async def test_a_delete_claimed_by_an_older_version_is_taken_once_stale(
        db: Db, store: BlobStore) -> None:
    account, file_id = await account_with_file(db)
    await _subscribed(db, account.id)
    await new_links(db, account, file_id, 4)
    claimed_at = utcnow()
    # As a version without owners claimed it: no owner, no generation raised.
    await db.files.update_one({"_id": file_id}, {"$set": {
        "state": "deleting", "deletingAt": claimed_at, "liveLinksAtDelete": 4}})
    alive = {"vaultd-alive"}
    young = await deletions.resume_orphaned(db, store, alive, "vaultd-alive", claimed_at)
    assert young == 0 and await db.files.find_one({"_id": file_id}) is not None
    stale_before = claimed_at + timedelta(seconds=1)
    assert await deletions.resume_orphaned(db, store, alive, "vaultd-alive", stale_before) == 1
    await background.settled()
    assert await _gone(db, account.id, file_id) == GONE
    assert await _raw_account_live(db, account.id) == 0

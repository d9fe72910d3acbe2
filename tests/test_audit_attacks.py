"""Attacks on the audit log, each attempted against a real vaultd and its database (the
operator's reach), each caught by the stand-alone verifier naming the entry or checkpoint."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from admin_cli import audit_verify
from tests.audit_helpers import checkpoint_of, fetch_export, problems, record_entries
from tests.vault_process import VaultProcess, running_vault
from vaultd.config import settings_from
from vaultd.runtime import database

pytestmark = pytest.mark.slow

AUDIT_ENV = {"VAULTD_AUDIT_MERGE_DELAY_SECONDS": "0.1",
             "VAULTD_AUDIT_CHECKPOINT_EVERY_ENTRIES": "4",
             "VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS": "0.5", "VAULTD_AUDIT_LEASE_SECONDS": "3"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("attacks") / "data", own_database=True,
                       **AUDIT_ENV) as server:
        yield server


@pytest.fixture
def account(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account("Target Co", "business")


@pytest.fixture
def api(vault: VaultProcess, account: tuple[str, str]) -> Iterator[httpx.Client]:
    with vault.client(account[1]) as client:
        yield client


def signed_log(vault: VaultProcess, account_id: str, api: httpx.Client, count: int,
               ) -> tuple[list[str], dict[str, Any]]:
    ids = record_entries(vault, account_id, count)
    checkpoint_of(api, count)
    return ids, fetch_export(api, vault.data_dir.parent / f"{account_id}.json")


def index_of(export: dict[str, Any], entry_id: str) -> int:
    return next(int(item["index"]) for item in export["entries"] if item["id"] == entry_id)


def operator(vault: VaultProcess, change: Any) -> None:
    """The operator's reach: the database, written directly."""
    async def run(db: Any) -> None:
        await change(db)
    vault.run_service(run)


def offline(vault: VaultProcess, change: Any) -> None:
    """The operator's reach with vaultd stopped: the database opened as vault-admin does."""
    settings = settings_from(None, {"data_dir": str(vault.data_dir)})

    async def run() -> None:
        async with database(settings) as db:
            await change(db)
    asyncio.run(run())


def test_an_untouched_export_verifies(vault: VaultProcess, account: tuple[str, str],
                                      api: httpx.Client) -> None:
    _, export = signed_log(vault, account[0], api, 8)
    assert problems(export) == []


def test_an_entry_edited_in_the_database_is_named(vault: VaultProcess, account: tuple[str, str],
                                                  api: httpx.Client) -> None:
    ids, before = signed_log(vault, account[0], api, 8)
    victim = ids[3]
    # The log fence's validator (services.common.log_fence) applies to updates too: an entry
    # stamped before its horizon is changed only bypassing it, as the operator, who holds the
    # database, can.
    operator(vault, lambda db: db.access_log.update_one(
        {"_id": victim}, {"$set": {"viewerEmail": "someone-else@client.example"}},
        bypass_document_validation=True))
    after = fetch_export(api, vault.data_dir.parent / "edited.json")
    assert problems(after) == [
        f"entry {index_of(before, victim)} (access {victim}): its content does not hash to "
        "the tree's leaf (edited, or moved to another index)"]


def test_an_entry_deleted_from_the_database_is_named(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    ids, before = signed_log(vault, account[0], api, 8)
    victim = ids[5]
    operator(vault, lambda db: db.access_log.delete_one({"_id": victim}))
    after = fetch_export(api, vault.data_dir.parent / "deleted.json")
    assert problems(after) == [f"entry {index_of(before, victim)} (access {victim}): the entry "
                               "is missing (deleted from the database)"]


def test_entries_reordered_in_the_database_are_named(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    ids, before = signed_log(vault, account[0], api, 8)
    first, second = index_of(before, ids[1]), index_of(before, ids[6])

    async def swap(db: Any) -> None:  # the two entries trade places in the order
        one = await db.audit_pieces.find_one({"keys": f"access:{ids[1]}"})
        other = await db.audit_pieces.find_one({"keys": f"access:{ids[6]}"})
        for piece, key, index in ((one, ids[6], first), (other, ids[1], second)):
            position = index - piece["block"] * 256 - piece["start"]
            await db.audit_pieces.update_one({"_id": piece["_id"]},
                                             {"$set": {f"keys.{position}": f"access:{key}"}})
    operator(vault, swap)
    after = fetch_export(api, vault.data_dir.parent / "reordered.json")
    reason = "its content does not hash to the tree's leaf (edited, or moved to another index)"
    assert problems(after) == [f"entry {first} (access {ids[6]}): {reason}",
                               f"entry {second} (access {ids[1]}): {reason}"]


def test_times_swapped_between_entries_are_named(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    ids, before = signed_log(vault, account[0], api, 4)

    async def swap_times(db: Any) -> None:
        one = await db.access_log.find_one({"_id": ids[0]})
        two = await db.access_log.find_one({"_id": ids[2]})
        await db.access_log.update_one({"_id": ids[0]}, {"$set": {"at": two["at"]}},
                                       bypass_document_validation=True)
        await db.access_log.update_one({"_id": ids[2]}, {"$set": {"at": one["at"]}},
                                       bypass_document_validation=True)
    operator(vault, swap_times)
    named = problems(fetch_export(api, vault.data_dir.parent / "times.json"))
    assert [p.split(":")[0] for p in named] == [
        f"entry {index_of(before, ids[0])} (access {ids[0]})",
        f"entry {index_of(before, ids[2])} (access {ids[2]})"]


def test_a_replayed_checkpoint_is_named(vault: VaultProcess, account: tuple[str, str],
                                        api: httpx.Client) -> None:
    _, first = signed_log(vault, account[0], api, 4)
    record_entries(vault, account[0], 8)
    checkpoint_of(api, 12)
    kept = fetch_export(api, vault.data_dir.parent / "kept.json")  # the customer's copy
    # The operator serves an older checkpoint again as the newest (hiding what followed).
    operator(vault, lambda db: db.audit_trees.update_one(
        {"_id": account[0]}, {"$set": {"checkpointSize": 4}}))
    assert api.get("/audit/checkpoint").json()["treeSize"] == 4
    served = fetch_export(api, vault.data_dir.parent / "rolled-back.json")
    assert problems(served, since=kept) == [
        f"the kept checkpoint (size {kept['treeSize']}) is newer than the new export's "
        "newest checkpoint (size 4): an old checkpoint was replayed"]
    # Within one export: an older checkpoint set after a newer one.
    replayed = copy.deepcopy(kept)
    replayed["checkpoints"] = [*kept["checkpoints"], first["checkpoints"][0]]
    old_size = first["checkpoints"][0].split("\n")[1]  # 4, or less if a round saw fewer
    assert (f"checkpoint #{len(kept['checkpoints'])} (size {old_size}): not newer than the "
            "checkpoint before it (replayed)" in problems(replayed))


def test_a_rebuilt_and_re_signed_tree_is_exposed_by_the_kept_export(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    ids, kept = signed_log(vault, account[0], api, 8)
    account_id = account[0]

    async def rebuild(db: Any) -> None:  # drop one entry and every audit record of the account
        await db.access_log.delete_one({"_id": ids[2]})
        await db.audit_trees.delete_one({"_id": account_id})
        await db.audit_checkpoints.delete_many({"accountId": account_id})
        for name in ("audit_pieces", "audit_blocks"):
            for doc in [doc async for doc in db.raw(name).find({"accountId": account_id})]:
                await db.raw(name).delete_one({"_id": doc["_id"]})
        await db.audit_sequencer.update_one({"_id": "lease"}, {"$set": {"cursors": {}}})
    vault.stop()  # done while vaultd is down: nothing of the old tree stays in a process
    offline(vault, rebuild)
    vault.start()
    with vault.client(account[1]) as after:  # a new port
        rebuilt_checkpoint = checkpoint_of(after, 7)
        assert rebuilt_checkpoint["treeSize"] == 7
        rebuilt = fetch_export(after, vault.data_dir.parent / "rebuilt.json")
        assert problems(rebuilt) == []  # alone, the forged log is consistent and signed
        assert problems(rebuilt, since=kept)[0] == (
            "the kept checkpoint (size 8) is newer than the new export's newest checkpoint "
            "(size 7): an old checkpoint was replayed")
        record_entries(vault, account_id, 4)
        checkpoint_of(after, 11)
        grown = fetch_export(after, vault.data_dir.parent / "rebuilt-grown.json")
    assert problems(grown, since=kept) == [
        "the kept checkpoint (size 8) is not consistent with the newest checkpoint (size 11): "
        "the log was rewritten (a fork)",
        f"entry {index_of(kept, ids[2])}: differs from the kept export (rewritten)"]


def test_a_rotated_key_leaves_old_checkpoints_verifiable(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client,
        tmp_path: Path) -> None:
    _, before = signed_log(vault, account[0], api, 4)
    old_key = next(key["verifierKey"] for key in before["keys"] if key["current"])
    rotated = vault.admin_json("audit", "rotate-key")
    assert rotated["verifierKey"] != old_key and rotated["current"] is True
    record_entries(vault, account[0], 4)
    newest = checkpoint_of(api, 8)
    after = fetch_export(api, tmp_path / "after.json")
    assert problems(after) == []
    assert problems(after, since=before) == []
    keys = {key["verifierKey"]: key for key in after["keys"]}
    assert keys[old_key]["current"] is False and "retiredAt" in keys[old_key]
    old = audit_verify.parse_verifier_key(old_key)
    assert audit_verify.parse_checkpoint(before["checkpoints"][-1], [old]).signed_by == old_key
    assert audit_verify.parse_checkpoint(newest["checkpoint"], [old]).signed_by is None
    # Pinned to the old key alone, every checkpoint signed since the rotation is named.
    pinned = audit_verify.verify(after, [old_key]).problems
    signed_since = [(number, audit_verify.parse_checkpoint(note, []).size)
                    for number, note in enumerate(after["checkpoints"])
                    if audit_verify.parse_checkpoint(note, []).size > 4]
    assert signed_since[-1][1] == 8
    assert pinned == [f"checkpoint #{number} (size {size}): no trusted key's signature verifies"
                      for number, size in signed_since]

    async def private_halves(db: Any) -> int:
        return len([doc async for doc in db.audit_keys.find({"key": {"$exists": True}})])
    assert vault.run_service(private_halves) == 1  # the retired key's seed is gone

"""The tamper-evident audit log against a real vaultd: entries sequenced off the page path,
signed checkpoints, proofs checked by the stand-alone verifier, the export and its CLI."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from admin_cli import audit_verify
from tests.audit_helpers import (
    checkpoint_of,
    fetch_export,
    problems,
    record_activity,
    record_entries,
)
from tests.http_helpers import assert_json_error
from tests.vault_process import ROOT, VaultProcess, base_env, running_vault
from tests.webhook_receiver import running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe
from vaultd.services.audit import leaves, merkle

pytestmark = pytest.mark.slow

AUDIT_ENV = {"VAULTD_AUDIT_MERGE_DELAY_SECONDS": "0.1",
             "VAULTD_AUDIT_CHECKPOINT_EVERY_ENTRIES": "5",
             "VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS": "0.5", "VAULTD_AUDIT_LEASE_SECONDS": "3",
             "VAULTD_AUDIT_ORIGIN": "vault.example/audit", **FAST_RETRIES}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    # Its own database: the sequencer's rounds (0.1 s merge delay, a checkpoint each 0.5 s)
    # decide how many checkpoints the tests count, so the database's answers are its alone.
    with running_vault(tmp_path_factory.mktemp("audit") / "data", own_database=True,
                       **AUDIT_ENV) as server:
        yield server


@pytest.fixture
def account(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account("Audit Co", "business")


@pytest.fixture
def api(vault: VaultProcess, account: tuple[str, str]) -> Iterator[httpx.Client]:
    with vault.client(account[1]) as client:
        yield client


def b64(text: str) -> bytes:
    return base64.b64decode(text)


def trusted_keys(vault: VaultProcess) -> list[audit_verify.VerifierKey]:
    with vault.client() as anon:  # the keys are public: a verifier needs them first
        response = anon.get("/audit/keys")
    assert response.status_code == 200
    return [audit_verify.parse_verifier_key(key["verifierKey"]) for key in response.json()["keys"]]


def test_entries_of_both_sources_are_signed_and_each_proves_its_inclusion(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    account_id = account[0]
    ids = record_entries(vault, account_id, 7)
    activity_ids = record_activity(vault, account_id, 3)
    checkpoint = checkpoint_of(api, 10)
    parsed = audit_verify.parse_checkpoint(checkpoint["checkpoint"], trusted_keys(vault))
    assert parsed.signed_by is not None
    assert parsed.origin == f"vault.example/audit/{account_id}"
    assert (parsed.size, base64.b64encode(parsed.root).decode()) == (10, checkpoint["rootHash"])
    export = fetch_export(api, vault.data_dir.parent / "whole.json")
    by_id = {item["id"]: item for item in export["entries"]}
    assert set(by_id) == set(ids) | set(activity_ids)
    for entry_id, kind in [*((i, "access") for i in ids), *((i, "activity") for i in activity_ids)]:
        item = by_id[entry_id]
        leaf = leaves.encode(kind, entry_id, account_id, item["entry"])  # type: ignore[arg-type]
        response = api.get(f"/audit/entries/{entry_id}/proof", params={"type": kind})
        assert response.status_code == 200, response.text
        proof = response.json()
        assert proof["index"] == item["index"] and proof["treeSize"] == 10
        assert b64(proof["leafHash"]) == merkle.leaf_hash(leaf)
        assert audit_verify.verify_inclusion(proof["index"], 10, merkle.leaf_hash(leaf),
                                             [b64(h) for h in proof["proof"]], parsed.root)
    assert problems(export) == []


def test_a_consistency_proof_links_an_older_checkpoint_to_a_newer_one(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    record_entries(vault, account[0], 6)
    older = checkpoint_of(api, 6)
    record_entries(vault, account[0], 9)
    newer = checkpoint_of(api, 15)
    keys = trusted_keys(vault)
    old = audit_verify.parse_checkpoint(older["checkpoint"], keys)
    new = audit_verify.parse_checkpoint(newer["checkpoint"], keys)
    response = api.get("/audit/proof/consistency", params={"from": old.size, "to": new.size})
    assert response.status_code == 200, response.text
    proof = [b64(h) for h in response.json()["proof"]]
    assert audit_verify.verify_consistency(old.size, new.size, old.root, new.root, proof)
    assert not audit_verify.verify_consistency(old.size, new.size, new.root, new.root, proof)


def test_bad_requests_get_their_documented_errors(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    assert_json_error(api.get("/audit/checkpoint"), 404,
                      "the account's audit log has no checkpoint yet")
    assert_json_error(api.get("/audit/export"), 404,
                      "the account's audit log has no checkpoint yet")
    record_entries(vault, account[0], 5)
    checkpoint_of(api, 5)
    get = api.get
    assert_json_error(get("/audit/proof/inclusion"), 400, "index is required")
    assert_json_error(get("/audit/proof/inclusion", params={"index": "x"}), 400,
                      "index must be an integer between 0 and 999999999")
    assert_json_error(get("/audit/proof/inclusion", params={"index": 5}), 404,
                      "no entry at index 5: the tree size is 5")
    assert_json_error(get("/audit/proof/inclusion", params={"index": 0, "treeSize": 99}), 404,
                      "treeSize is beyond the log: its tree size is 5")
    assert_json_error(get("/audit/entries/e/proof", params={"type": "x"}), 400,
                      "type must be access or activity")
    assert_json_error(get("/audit/proof/consistency"), 400, "from is required")
    assert_json_error(get("/audit/proof/consistency", params={"from": 4, "to": 2}), 404,
                      "no consistency proof from a larger tree to a smaller one")
    other_id, _ = vault.new_account("Other Co", "pro")
    theirs = record_entries(vault, other_id, 1)[0]
    assert_json_error(get(f"/audit/entries/{theirs}/proof"), 404,
                      "no such entry in the audit log (not of this account, or not sequenced "
                      "yet: within audit.merge_delay_seconds)")
    with vault.client() as anon:
        assert_json_error(anon.get("/audit/checkpoint"), 401,
                          "missing API key: send Authorization: Bearer <API_KEY>")


def run_cli(vault: VaultProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return vault.admin(*args, expect_ok=False)


def test_the_cli_exports_and_verifies_and_the_stand_alone_verifier_agrees(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client, tmp_path: Path) -> None:
    record_entries(vault, account[0], 5)
    checkpoint_of(api, 5)
    dest = tmp_path / "export.json"
    exported = run_cli(vault, "audit", "export", account[0], str(dest))
    assert exported.returncode == 0, exported.stderr
    verified = run_cli(vault, "audit", "verify", str(dest))
    # The sequencer may sign a smaller tree first, when the five entries fall in two of its
    # rounds: every checkpoint exported is verified, however many there are.
    signed = len(json.loads(dest.read_text())["checkpoints"])
    assert signed >= 1
    assert (verified.returncode, verified.stdout) == (0, f"ok: 5 entries, {signed} checkpoints\n")
    alone = subprocess.run([sys.executable, str(ROOT / "admin_cli" / "audit_verify.py"),
                            str(dest)], capture_output=True, text=True, check=False,
                           env=base_env(), cwd=tmp_path)
    assert (alone.returncode, alone.stdout) == (0, verified.stdout)
    missing = run_cli(vault, "audit", "export", "no-such-account", str(tmp_path / "x.json"))
    assert missing.returncode == 1 and "no-such-account" not in missing.stdout
    assert not (tmp_path / "x.json").exists()


def test_the_stand_alone_verifier_imports_nothing_of_vaultd() -> None:
    source = (ROOT / "admin_cli" / "audit_verify.py").read_text()
    imported = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imported and not [line for line in imported if "vaultd" in line or "admin_cli" in line]
    allowed = ("__future__", "argparse", "base64", "binascii", "hashlib", "json", "sys",
               "collections.abc", "dataclasses", "pathlib", "typing", "cryptography")
    assert all(line.split()[1].startswith(allowed) for line in imported), imported


def test_each_checkpoint_reaches_the_customers_webhook_signed(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    with running_receiver() as receiver:
        subscribe(api, receiver, ["audit.checkpoint"], vault)  # itself an activity entry
        record_entries(vault, account[0], 5)
        checkpoint = checkpoint_of(api, 6)
        got = receiver.wait_for(lambda received: any(
            json.loads(r.body)["data"]["treeSize"] == checkpoint["treeSize"] for r in received))
    event = next(json.loads(r.body) for r in got
                 if json.loads(r.body)["data"]["treeSize"] == checkpoint["treeSize"])
    assert event["type"] == "audit.checkpoint"
    assert event["data"] == checkpoint  # the witness keeps the very note the API serves
    parsed = audit_verify.parse_checkpoint(event["data"]["checkpoint"], trusted_keys(vault))
    assert parsed.signed_by is not None and parsed.size == checkpoint["treeSize"] == 6


def test_a_master_key_rotation_rewraps_the_signing_key_and_signing_goes_on(
        vault: VaultProcess, account: tuple[str, str], api: httpx.Client) -> None:
    record_entries(vault, account[0], 5)
    before = checkpoint_of(api, 5)
    rotated = vault.admin_json("master-key", "rotate", "--drop-old")
    assert len(rotated["keyIds"]) == 1

    async def wrapped_under(db: Any) -> list[str]:
        return [doc["key"]["key_id"] async for doc in db.audit_keys.find(
            {"key": {"$exists": True}})]
    assert vault.run_service(wrapped_under) == [rotated["currentKeyId"]]
    record_entries(vault, account[0], 5)
    after = checkpoint_of(api, before["treeSize"] + 5)
    assert after["keyId"] == before["keyId"]  # the same signing key, now under the new master key
    assert audit_verify.parse_checkpoint(after["checkpoint"], trusted_keys(vault)).signed_by

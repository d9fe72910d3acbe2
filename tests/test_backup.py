"""vault-admin backup / backup verify / restore, through real processes: a vaultd serving while
it is backed up (an upload in flight), the backup checked and damaged, and restores started as
vaultd again, on the embedded database and on a MongoDB-wire server of our own."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from backends.local import LocalBackend
from tests import documents as docs
from tests.backup_helpers import (
    TRAILING,
    HeldUpload,
    VaultContents,
    capture,
    populate,
    run_in_thread,
    secantus_server,
)
from tests.cli_errors import admin_error
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess, running_vault
from tests.waiting import wait_until
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.services.storage.backup import BlobCopy, export_collection, prepare_destination
from vaultd.services.storage.backup_manifest import collection_path, restorable_files
from vaultd.services.storage.backup_seal import sealed

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@dataclass
class BackedUp:
    vault: VaultProcess
    before: VaultContents  # what the vault held when the backup started
    originals: dict[str, bytes]
    tokens: list[str]
    backup: Path
    report: dict[str, Any]
    late_file: dict[str, Any]  # the upload that was in flight during the backup

    @property
    def key_file(self) -> Path:
        return self.vault.data_dir / "master.key"


@pytest.fixture(scope="module")
def backed_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackedUp]:
    root = tmp_path_factory.mktemp("backup")
    with running_vault(root / "vault", own_database=True,
                       VAULTD_BODY_IDLE_TIMEOUT_SECONDS="120") as vault:
        made = populate(vault)
        before = capture(vault, made.key)
        held = HeldUpload(vault, made.key)
        report = vault.admin_json("backup", str(root / "backup"))
        thread, late = run_in_thread(held.finish)
        thread.join(60)
        assert late and late[0]["id"] == held.file_id
        yield BackedUp(vault, before, made.originals, made.tokens, root / "backup", report,
                       late[0])


def damaged_copy(backed_up: BackedUp, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(backed_up.backup, copy)
    return copy


def test_a_backup_of_a_running_vault_holds_every_record_and_blob(backed_up: BackedUp) -> None:
    manifest = json.loads((backed_up.backup / "manifest.json").read_text())
    counts = {name: n for name, n in manifest["collections"].items()
              if n and name not in TRAILING and not name.startswith("audit_")}
    assert counts == backed_up.before.counts  # the held upload finished after: not in it
    assert backed_up.report["collections"] == manifest["collections"]
    assert backed_up.late_file["id"] not in (backed_up.backup / "db" / "files.jsonl").read_text()
    stored = sorted(p.name for p in (backed_up.backup / "blobs").iterdir())
    assert stored == sorted(manifest["blobs"]) and len(stored) == len(backed_up.originals)
    assert manifest["missingBlobs"] == [] and manifest["deletedDuringBackup"] == []
    ring = MasterKeyring.load(backed_up.key_file)
    assert manifest["masterKey"] == {"currentId": ring.current_id,
                                     "fingerprints": ring.fingerprints()}
    key_text = backed_up.key_file.read_text()
    everything = "".join(p.read_text(errors="replace") for p in backed_up.backup.rglob("*")
                         if p.is_file())
    assert ring.serialize(one_line=True).split(":", 1)[1] not in everything
    assert key_text not in everything


def test_verify_passes_an_intact_backup(backed_up: BackedUp) -> None:
    summary = backed_up.vault.admin_json("backup", "verify", str(backed_up.backup))
    assert summary["ok"] is True and summary["problems"] == []
    assert summary["fileRecordsChecked"] == len(backed_up.originals)
    text = backed_up.vault.admin("backup", "verify", str(backed_up.backup)).stdout
    assert text.startswith("ok: ") and "4 file records have their blobs" in text


def test_verify_names_a_corrupted_byte(backed_up: BackedUp, tmp_path: Path) -> None:
    copy = damaged_copy(backed_up, tmp_path)
    blob = sorted((copy / "blobs").iterdir())[0]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    result = backed_up.vault.admin("backup", "verify", str(copy), expect_ok=False)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == f"problem: blobs/{blob.name}: checksum mismatch"
    line = admin_error(backed_up.vault, "restore", str(copy), "--data-dir",
                       str(tmp_path / "new"), "--master-key-file", str(backed_up.key_file))
    assert line == (f"vault-admin: backup {copy} does not verify: blobs/{blob.name}: "
                    "checksum mismatch")
    assert not (tmp_path / "new").exists()


def test_verify_names_a_deleted_blob(backed_up: BackedUp, tmp_path: Path) -> None:
    copy = damaged_copy(backed_up, tmp_path)
    blob = sorted((copy / "blobs").iterdir())[0]
    blob.unlink()
    problems = backed_up.vault.admin("--json", "backup", "verify", str(copy),
                                     expect_ok=False)
    assert problems.returncode == 1
    summary = json.loads(problems.stdout)
    file_id = blob.name  # a file's blob is named after the file
    assert summary["problems"] == [f"blobs/{blob.name}: missing",
                                   f"file {file_id}: blob {blob.name} is missing"]


def test_verify_refuses_a_directory_without_a_manifest(backed_up: BackedUp,
                                                       tmp_path: Path) -> None:
    copy = damaged_copy(backed_up, tmp_path)
    (copy / "manifest.json").unlink()
    assert admin_error(backed_up.vault, "backup", "verify", str(copy)) == (
        f"vault-admin: {copy}: no manifest.json: not a backup, or an unfinished one")


def test_backup_refuses_a_directory_that_is_not_empty(backed_up: BackedUp) -> None:
    assert admin_error(backed_up.vault, "backup", str(backed_up.backup)) == (
        f"vault-admin: {backed_up.backup} is not empty: back up into a new or empty directory")


def test_restore_refuses_a_data_directory_that_is_not_empty(backed_up: BackedUp,
                                                            tmp_path: Path) -> None:
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "notes.txt").write_text("mine")
    assert admin_error(backed_up.vault, "restore", str(backed_up.backup), "--data-dir",
                       str(tmp_path / "new"), "--master-key-file", str(backed_up.key_file)) == (
        f"vault-admin: {tmp_path / 'new'} is not empty: restore needs a new, empty data "
        "directory")


def test_restore_refuses_a_key_that_is_not_the_vaults(backed_up: BackedUp,
                                                      tmp_path: Path) -> None:
    ring = MasterKeyring.load(backed_up.key_file)
    impostor = MasterKeyring([(ring.current_id, b"\x07" * 32)])
    impostor.save(tmp_path / "impostor.key")
    line = admin_error(backed_up.vault, "restore", str(backed_up.backup), "--data-dir",
                       str(tmp_path / "new"), "--master-key-file", str(tmp_path / "impostor.key"))
    assert line == (f"vault-admin: the master key does not match the backup: key "
                    f"{ring.current_id} has fingerprint "
                    f"{impostor.fingerprints()[ring.current_id]}, the backup "
                    f"{ring.fingerprints()[ring.current_id]}")
    other = MasterKeyring.generate()
    other.save(tmp_path / "other.key")
    line = admin_error(backed_up.vault, "restore", str(backed_up.backup), "--data-dir",
                       str(tmp_path / "new"), "--master-key-file", str(tmp_path / "other.key"))
    assert line == (f"vault-admin: the master key does not match the backup: it has no key "
                    f"{ring.current_id} (fingerprint {ring.fingerprints()[ring.current_id]})")
    assert admin_error(backed_up.vault, "restore", str(backed_up.backup), "--data-dir",
                       str(tmp_path / "new")) == (
        "vault-admin: no master key: a backup never holds it; give the vault's key file with "
        "--master-key-file (or set master_key.file or VAULTD_MASTER_KEY)")
    assert not (tmp_path / "new").exists()


def check_restored(restored: VaultProcess, backed_up: BackedUp) -> None:
    """The same account, files, logs and counts; every file byte-identical or rendered."""
    after = capture(restored, backed_up.before.key)
    assert after.account == backed_up.before.account
    assert after.files == backed_up.before.files
    assert after.logs == backed_up.before.logs
    assert after.counts == backed_up.before.counts
    with restored.client(backed_up.before.key) as client:
        assert client.get(f"/files/{backed_up.late_file['id']}").status_code == 404
        for file in after.files:
            if file["kind"] == "delivery":
                download = client.get(f"/files/{file['id']}/download")
                assert download.content == backed_up.originals[file["id"]]
        for token in backed_up.tokens:  # links made before the backup still open every page
            page = client.get(f"/views/{token}/pages/1")
            assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"


def test_a_restored_vault_serves_what_the_original_held(backed_up: BackedUp,
                                                        tmp_path: Path) -> None:
    new = tmp_path / "restored"
    report = backed_up.vault.admin_json("restore", str(backed_up.backup), "--data-dir", str(new),
                                        "--master-key-file", str(backed_up.key_file))
    assert report["database"] == "embedded" and report["blobs"] == len(backed_up.originals)
    assert (new / "master.key").read_text() == backed_up.key_file.read_text()
    with running_vault(new, own_database=True) as restored:
        restored.secrets.append(backed_up.before.key)
        check_restored(restored, backed_up)


def test_restore_moves_a_vault_into_an_external_database(backed_up: BackedUp,
                                                          tmp_path: Path) -> None:
    with secantus_server(tmp_path / "mongo") as uri:
        env = {"VAULTD_MONGODB_URI": uri}
        target = VaultProcess(tmp_path / "moved", env=env)
        report = target.admin_json("restore", str(backed_up.backup), "--master-key-file",
                                   str(backed_up.key_file))
        assert report["database"] == "mongodb.uri"
        with running_vault(tmp_path / "moved", own_database=True, **env) as moved:
            check_restored(moved, backed_up)
        again = VaultProcess(tmp_path / "again", env=env)
        assert admin_error(again, "restore", str(backed_up.backup), "--master-key-file",
                           str(backed_up.key_file)) == (
            "vault-admin: database vaultd is not empty (collection access_log): restore needs "
            "an empty database")


def test_a_restore_stopped_part_way_says_what_it_left_and_what_to_empty(
        backed_up: BackedUp, tmp_path: Path) -> None:
    """The database refuses vault-admin's inserts after its first five (code 91, shutting down):
    the restore names what it left and what to do (a restore into the emptied database is
    `test_restore_moves_a_vault_into_an_external_database`)."""
    with secantus_server(tmp_path / "mongo", test_commands=True) as uri:
        env = {"VAULTD_MONGODB_URI": uri}
        with MongoClient(uri) as client:
            client.admin.command({"configureFailPoint": "failCommand", "mode": {"skip": 5},
                                  "data": {"failCommands": ["insert"], "errorCode": 91,
                                           "appName": "vaultd"}})
            target = VaultProcess(tmp_path / "moved", env=env)
            assert admin_error(target, "restore", str(backed_up.backup), "--master-key-file",
                               str(backed_up.key_file)) == (
                "vault-admin: the restore stopped part way (the connection to the database was "
                "lost or refused): database vaultd holds part of the backup; drop database "
                "vaultd (or name an empty one), then restore again")
            client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
            assert client["vaultd"]["files"].find_one() is not None  # what it left


def test_restore_without_a_backup_is_a_usage_error(backed_up: BackedUp) -> None:
    result: subprocess.CompletedProcess[str] = backed_up.vault.admin("restore", expect_ok=False)
    assert result.returncode == 2 and "Missing argument 'BACKUP'" in result.stderr


def test_a_file_deleted_while_its_blob_is_copied_is_named_and_left_out(
        backed_up: BackedUp, tmp_path: Path) -> None:
    """The steps of `create_backup` in its order, with a deletion between the export of the
    records and the copy of the blobs."""
    vault, dest = backed_up.vault, tmp_path / "backup"
    with vault.client(backed_up.before.key) as client:
        doomed = upload_ok(client, docs.pdf(1), kind="delivery")["id"]

        async def steps(db: Db) -> BlobCopy:
            prepare_destination(dest, copy_blobs=True)
            await export_collection(db.raw("files"), collection_path(dest, "files"))
            deleted = await asyncio.to_thread(client.delete, f"/files/{doomed}")
            assert deleted.status_code == 204
            copier = BlobCopy(db, LocalBackend(vault.data_dir / "blobs"), dest, copy=True)
            for doc in restorable_files(dest, {}):
                await copier.take(doc)
            return copier

        copier = vault.run_service(steps)
    assert copier.deleted == [doomed] and copier.missing == []
    assert doomed not in copier.listing and not (dest / "blobs" / doomed).exists()
    assert set(copier.listing) == set(backed_up.originals) | {backed_up.late_file["id"]}


def test_a_backup_names_a_file_whose_blob_is_missing_from_storage(backed_up: BackedUp,
                                                                   tmp_path: Path) -> None:
    vault = backed_up.vault
    with vault.client(backed_up.before.key) as client:
        broken = upload_ok(client, docs.pdf(1), kind="delivery")["id"]
    (vault.data_dir / "blobs" / broken).unlink()
    result = vault.admin("backup", str(tmp_path / "backup"), expect_ok=False)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        f"file {broken}: blob {broken} is missing from storage (see vault-admin storage verify)")
    verified = vault.admin("--json", "backup", "verify", str(tmp_path / "backup"),
                           expect_ok=False)
    assert verified.returncode == 1
    problems = json.loads(verified.stdout)
    assert problems["problems"] == [f"file {broken}: blob {broken} is not in the backup's "
                                    "listing"]
    with vault.client(backed_up.before.key) as client:  # later tests back this vault up again
        assert client.delete(f"/files/{broken}").status_code == 204


def test_restore_leaves_out_a_file_deleted_during_the_backup_and_recounts_usage(
        backed_up: BackedUp, tmp_path: Path) -> None:
    copy = damaged_copy(backed_up, tmp_path)  # the manifest is not among the checksummed files
    manifest = json.loads((copy / "manifest.json").read_text())
    gone = next(f for f in backed_up.before.files if f["kind"] == "delivery")
    manifest["deletedDuringBackup"] = [gone["id"]]
    # As vault-admin writes it when a file goes during the backup: sealed under the vault's key.
    resealed = sealed(manifest, MasterKeyring.load(backed_up.key_file))
    (copy / "manifest.json").write_text(json.dumps(resealed))
    new = tmp_path / "restored"
    backed_up.vault.admin("restore", str(copy), "--data-dir", str(new), "--master-key-file",
                          str(backed_up.key_file))
    account = backed_up.before.account
    shown = VaultProcess(new).admin_json("accounts", "show", account["id"])
    assert shown["usage"] == {
        "documents": account["usage"]["documents"] - 1,
        "storageBytes": account["usage"]["storageBytes"] - gone["size"],
        "activeLinks": account["usage"]["activeLinks"] - 1,  # its link went with it
        "apiKeys": 1,
    }
    assert not (new / "blobs" / gone["id"]).exists()


def test_an_upload_finishing_during_a_backup_is_in_it_whole_or_not_at_all(
        backed_up: BackedUp, tmp_path: Path) -> None:
    vault, dest = backed_up.vault, tmp_path / "backup"
    held = HeldUpload(vault, backed_up.before.key)
    thread, result = run_in_thread(
        lambda: vault.admin("--json", "backup", str(dest), expect_ok=False))
    wait_until((dest / "db").is_dir, what="the backup under way")
    finished = held.finish()
    thread.join(120)
    assert result and result[0].returncode == 0, result
    manifest = json.loads((dest / "manifest.json").read_text())
    recorded = finished["id"] in (dest / "db" / "files.jsonl").read_text()
    assert recorded == (finished["id"] in manifest["blobs"])  # never a record without its blob
    assert vault.admin_json("backup", "verify", str(dest))["ok"] is True

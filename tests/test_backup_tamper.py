"""A backup changed on purpose is refused by `vault-admin backup verify` and `restore`, through
real processes: a key record moved onto another account, or a flipped blob byte, each with
every checksum of the manifest recomputed as an attacker with write access to the backup would;
a manifest stripped of its MAC; a vault's key that is not the backup's. docs/security.md
("Backups"), docs/operations.md ("Backup and restore")."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import documents as docs
from tests.cli_errors import admin_error
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess, running_vault
from vaultd.services.storage.backup_manifest import sha256_file

pytestmark = pytest.mark.slow  # starts its own vaultd and vault-admin processes

BAD_MAC = ("manifest.json: MAC mismatch: changed since the backup was made, or not made under "
           "this master key")
NO_MAC = ("manifest.json: carries no MAC, so nothing shows it is the manifest vaultd wrote (a "
          "backup of an older vaultd, or one stripped of its MAC): refused; "
          "--accept-unauthenticated reads it anyway")


@dataclass
class Backup:
    vault: VaultProcess
    path: Path
    victim: str  # account id
    attacker: str  # account id of the attacker's own account
    attacker_key: str


@pytest.fixture(scope="module")
def backup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backup]:
    root = tmp_path_factory.mktemp("tamper")
    with running_vault(root / "vault", own_database=True) as vault:
        victim, victim_key = vault.new_account("Victim Co", "business")
        attacker, attacker_key = vault.new_account("Mallory Ltd")
        with vault.client(victim_key) as client:
            upload_ok(client, docs.pdf(2), name="board minutes.pdf")
        vault.admin_json("backup", str(root / "backup"))
        yield Backup(vault, root / "backup", victim, attacker, attacker_key)


def copy_of(backup: Backup, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(backup.path, copy)
    return copy


def recompute_checksums(copy: Path, strip_mac: bool = False) -> None:
    """What an attacker can do without the master key: make every checksum match again."""
    manifest = json.loads((copy / "manifest.json").read_text())
    for relative in manifest["files"]:
        digest, size = sha256_file(copy / relative)
        manifest["files"][relative] = {"sha256": digest, "size": size}
        if relative.startswith("blobs/"):
            manifest["blobs"][relative.removeprefix("blobs/")] = {"sha256": digest, "size": size}
    if strip_mac:
        del manifest["mac"]
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))


def move_key_to(copy: Path, key_owner: str, victim: str) -> None:
    path = copy / "db" / "api_keys.jsonl"
    lines = path.read_text().splitlines()
    moved = [line.replace(f'"accountId": "{key_owner}"', f'"accountId": "{victim}"')
             for line in lines]
    assert moved != lines
    path.write_text("".join(line + "\n" for line in moved))


def flip_blob_byte(copy: Path) -> Path:
    blob = sorted((copy / "blobs").iterdir())[0]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    return blob


def verify_problems(vault: VaultProcess, copy: Path, *flags: str) -> list[str]:
    result = vault.admin("--json", "backup", "verify", str(copy), *flags, expect_ok=False)
    assert result.returncode == 1, result
    problems: list[str] = json.loads(result.stdout)["problems"]
    return problems


def restore_refusal(backup: Backup, copy: Path, tmp_path: Path) -> str:
    line = admin_error(backup.vault, "restore", str(copy), "--data-dir", str(tmp_path / "new"),
                       "--master-key-file", str(backup.vault.data_dir / "master.key"))
    assert not (tmp_path / "new").exists()  # nothing written
    return line


def test_an_intact_backup_verifies_with_its_mac(backup: Backup) -> None:
    summary = backup.vault.admin_json("backup", "verify", str(backup.path))
    assert summary["ok"] and summary["manifestAuthenticated"] and summary["blobsDecrypted"] == 1
    text = backup.vault.admin("backup", "verify", str(backup.path)).stdout
    assert text.startswith("ok: manifest MAC verified, ") and "1 blobs decrypted" in text


def test_a_key_moved_onto_another_account_is_refused(backup: Backup, tmp_path: Path) -> None:
    copy = copy_of(backup, tmp_path)
    move_key_to(copy, backup.attacker, backup.victim)
    recompute_checksums(copy)
    assert verify_problems(backup.vault, copy) == [BAD_MAC]
    assert restore_refusal(backup, copy, tmp_path) == (
        f"vault-admin: backup {copy} does not verify: {BAD_MAC}")


def test_a_flipped_blob_byte_with_recomputed_checksums_is_refused(
        backup: Backup, tmp_path: Path) -> None:
    copy = copy_of(backup, tmp_path)
    blob = flip_blob_byte(copy)
    recompute_checksums(copy)
    failed = (rf"blobs/{blob.name}: fails authentication \(file {blob.name}\): chunk \d+ "
              "failed authentication")
    problems = verify_problems(backup.vault, copy)
    assert problems[0] == BAD_MAC and len(problems) == 2
    assert re.fullmatch(failed, problems[1]), problems
    assert re.fullmatch(rf"vault-admin: backup {re.escape(str(copy))} does not verify: "
                        rf"{re.escape(BAD_MAC)}; {failed}", restore_refusal(backup, copy, tmp_path))


def test_the_blobs_tags_catch_what_an_unauthenticated_manifest_lets_through(
        backup: Backup, tmp_path: Path) -> None:
    copy = copy_of(backup, tmp_path)
    blob = flip_blob_byte(copy)
    recompute_checksums(copy, strip_mac=True)
    problems = verify_problems(backup.vault, copy, "--accept-unauthenticated")
    assert len(problems) == 1 and re.fullmatch(
        rf"blobs/{blob.name}: fails authentication \(file {blob.name}\): chunk \d+ failed "
        "authentication", problems[0]), problems


def test_a_manifest_without_a_mac_is_refused_unless_accepted(backup: Backup,
                                                             tmp_path: Path) -> None:
    copy = copy_of(backup, tmp_path)
    recompute_checksums(copy, strip_mac=True)  # as a backup of an older vaultd
    assert verify_problems(backup.vault, copy) == [NO_MAC]
    assert restore_refusal(backup, copy, tmp_path) == (
        f"vault-admin: backup {copy} does not verify: {NO_MAC}")
    accepted = backup.vault.admin("backup", "verify", str(copy), "--accept-unauthenticated")
    assert accepted.stdout.startswith("ok: manifest NOT authenticated, ")
    move_key_to(copy, backup.attacker, backup.victim)  # what accepting it risks: said in the docs
    recompute_checksums(copy)
    assert backup.vault.admin_json("backup", "verify", str(copy),
                                   "--accept-unauthenticated")["ok"] is True


def test_a_mac_under_a_key_the_vault_does_not_hold_is_named(backup: Backup,
                                                            tmp_path: Path) -> None:
    copy = copy_of(backup, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["mac"]["keyId"] = "mk-elsewhere"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert verify_problems(backup.vault, copy) == [
        "manifest.json: its MAC is under master key mk-elsewhere, which the supplied keyring "
        "does not hold"]

"""In-process checks of the backup format: the master key's fingerprint, the export order, the
extended-JSON round trip and what verify reports on a backup built here on disk."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bson

from vaultd.crypto.keyring import MasterKeyring
from vaultd.services.storage.backup import export_order
from vaultd.services.storage.backup_manifest import (
    FORMAT,
    encode_doc,
    read_docs,
    sha256_file,
    verify_backup,
    write_manifest,
)


def test_a_fingerprint_is_a_mac_under_the_key_not_the_key() -> None:
    key = bytes(range(32))
    ring = MasterKeyring([("mk-a", key), ("mk-b", b"\x01" * 32)])
    expected = hmac.new(key, b"vaultd/master-key-fingerprint/v1", hashlib.sha256).hexdigest()
    assert ring.fingerprints()["mk-a"] == expected[:32]
    assert ring.fingerprints()["mk-b"] != ring.fingerprints()["mk-a"]
    assert MasterKeyring([("mk-a", key)]).fingerprints() == {"mk-a": expected[:32]}
    assert key.hex() not in str(ring.fingerprints())
    assert hashlib.sha256(key).hexdigest()[:32] != expected[:32]


def test_files_and_accounts_are_exported_last_and_system_collections_never() -> None:
    names = ["files", "links", "accounts", "access_log", "system.views", "api_keys"]
    assert export_order(names) == ["access_log", "api_keys", "links", "files", "accounts"]


def test_the_log_numbers_counters_are_exported_before_the_log() -> None:
    # The counters trail the entries' numbers: exported first, they never claim a number that
    # the exported log does not hold (backup.py, fact 4).
    names = ["access_log", "number_counters", "files", "accounts", "activity"]
    assert export_order(names) == ["number_counters", "access_log", "activity", "files",
                                   "accounts"]


def test_documents_keep_their_types_through_extended_json(tmp_path: Path) -> None:
    doc: dict[str, Any] = {"_id": "f1", "at": datetime(2026, 11, 26, 9, 0, 1, 5000, tzinfo=UTC),
                           "key": {"nonce": bson.Binary(b"\x00\xff" * 6)}, "big": bson.Int64(7),
                           "n": 3, "x": 1.5}
    path = tmp_path / "c.jsonl"
    path.write_text(encode_doc(doc) + "\n")
    (back,) = list(read_docs(path))
    # Binary subtype 0 comes back as bytes, as the driver returns it from the database.
    assert back == {**doc, "key": {"nonce": b"\x00\xff" * 6}}
    assert isinstance(back["big"], bson.Int64) and isinstance(back["key"]["nonce"], bytes)
    assert back["at"].tzinfo is not None


def make_backup(root: Path, files: list[dict[str, Any]], blobs: dict[str, bytes]) -> Path:
    (root / "db").mkdir(parents=True)
    (root / "blobs").mkdir()
    (root / "db" / "files.jsonl").write_text("".join(encode_doc(d) + "\n" for d in files))
    for name, data in blobs.items():
        (root / "blobs" / name).write_bytes(data)
    checksums = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest, size = sha256_file(path)
            checksums[str(path.relative_to(root))] = {"sha256": digest, "size": size}
    listing = {name: checksums[f"blobs/{name}"] for name in blobs}
    write_manifest(root, {"format": FORMAT, "files": checksums, "blobs": listing,
                          "blobsCopied": True, "deletedDuringBackup": ["gone"],
                          "masterKey": {"currentId": "mk-a", "fingerprints": {"mk-a": "00"}}})
    return root


def file_record(file_id: str, state: str = "stored") -> dict[str, Any]:
    return {"_id": file_id, "state": state, "blob": {"name": file_id}}


def test_verify_passes_a_whole_backup_and_skips_files_deleted_meanwhile(tmp_path: Path) -> None:
    records = [file_record("a"), file_record("gone"), file_record("b", "deleting")]
    result = verify_backup(make_backup(tmp_path / "b", records, {"a": b"blob a"}))
    assert result.problems == [] and result.records_checked == 1
    assert result.summary()["filesChecked"] == 2


def test_verify_names_a_record_without_a_blob_and_a_stray_file(tmp_path: Path) -> None:
    backup = make_backup(tmp_path / "b", [file_record("a"), file_record("c")], {"a": b"blob a"})
    (backup / "blobs" / "extra").write_bytes(b"?")
    assert verify_backup(backup).problems == [
        "blobs/extra: not in the manifest",
        "file c: blob c is not in the backup's listing",
    ]


def test_verify_wants_the_master_key_named(tmp_path: Path) -> None:
    backup = make_backup(tmp_path / "b", [], {})
    manifest = json.loads((backup / "manifest.json").read_text())
    write_manifest(backup, {**manifest, "masterKey": {}})
    assert verify_backup(backup).problems == ["manifest.json: names no master key fingerprint"]

"""The backup's format on disk, and its verification.

A backup is a directory:

- `db/<collection>.jsonl`: every document of the collection, one per line, in MongoDB's
  canonical extended JSON (types survive the trip: dates, binary, 64-bit integers);
- `blobs/<name>`: the encrypted blobs, byte for byte (local storage only; for a cloud container
  the manifest holds a listing and copying the container is the operator's job);
- `manifest.json`, written last: the sha256 and size of every other file, the blob listing with
  checksums, the vault version, the times, the master keys' fingerprints (never a key), and
  a MAC over all of it under a key derived from the master key (`backup_seal`).

A directory without a manifest is an unfinished backup.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bson import json_util
from bson.json_util import CANONICAL_JSON_OPTIONS

FORMAT = "vaultd-backup/1"
MANIFEST = "manifest.json"
DB_DIR = "db"
BLOB_DIR = "blobs"
READ_PIECE = 1 << 20
_JSON_OPTIONS = CANONICAL_JSON_OPTIONS.with_options(tz_aware=True)


class BackupError(ValueError):
    """A backup cannot be made, read or restored; the message is one line for the operator."""


def encode_doc(doc: Mapping[str, Any]) -> str:
    return json_util.dumps(doc, json_options=_JSON_OPTIONS)


def read_docs(path: Path) -> Iterator[dict[str, Any]]:
    """The documents of one `db/<collection>.jsonl`, one at a time."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                yield json_util.loads(line, json_options=_JSON_OPTIONS)
            except ValueError:
                raise BackupError(f"{path}: line {number} is not extended JSON") from None


def sha256_file(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as source:
        while piece := source.read(READ_PIECE):
            digest.update(piece)
            size += len(piece)
    return digest.hexdigest(), size


def collection_path(dest: Path, name: str) -> Path:
    return dest / DB_DIR / f"{name}.jsonl"


def write_manifest(dest: Path, manifest: Mapping[str, Any]) -> None:
    """Atomically, so that a backup is complete exactly when it has a manifest."""
    tmp = dest / f".{MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(manifest, out, indent=2, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, dest / MANIFEST)


def read_manifest(dest: Path) -> dict[str, Any]:
    path = dest / MANIFEST
    if not dest.is_dir():
        raise BackupError(f"{dest}: no such backup directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(f"{dest}: no {MANIFEST}: not a backup, or an unfinished one") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"{path}: unreadable: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{path}: not a {FORMAT} manifest")
    return manifest


def file_blob_names(doc: Mapping[str, Any]) -> list[str]:
    """The blobs a file record needs: its own and, for an image, its rendition."""
    names = [str(doc["blob"]["name"])]
    if "rendition" in doc:
        names.append(str(doc["rendition"]["name"]))
    return names


def restorable_files(dest: Path, manifest: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The file records a restore brings back: stored, and not deleted while the backup ran."""
    gone = set(manifest.get("deletedDuringBackup", []))
    path = collection_path(dest, "files")
    if not path.exists():
        return
    for doc in read_docs(path):
        if doc.get("state") == "stored" and doc["_id"] not in gone:
            yield doc


# --- verify -------------------------------------------------------------------------------------


@dataclass
class Verification:
    manifest: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    files_checked: int = 0
    bytes_checked: int = 0
    records_checked: int = 0
    authenticated: bool = False  # the manifest's MAC held (`backup_verify`)
    blobs_decrypted: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "ok": not self.problems, "problems": self.problems,
            "manifestAuthenticated": self.authenticated, "blobsDecrypted": self.blobs_decrypted,
            "vaultVersion": self.manifest.get("vaultVersion"),
            "finishedAt": self.manifest.get("finishedAt"),
            "collections": self.manifest.get("collections", {}),
            "blobs": len(self.manifest.get("blobs", {})),
            "blobsCopied": self.manifest.get("blobsCopied"),
            "filesChecked": self.files_checked, "bytesChecked": self.bytes_checked,
            "fileRecordsChecked": self.records_checked,
        }


def verify_backup(dest: Path) -> Verification:
    """Every checksum, no stray files, and every restorable file record's blob present; what
    makes the checksums trustworthy is `backup_verify.verify_authentic`, which runs this."""
    result = Verification(read_manifest(dest))
    if not result.manifest.get("masterKey", {}).get("fingerprints"):
        result.problems.append(f"{MANIFEST}: names no master key fingerprint")
    _check_checksums(dest, result)
    _check_strays(dest, result)
    _check_records_have_blobs(dest, result)
    return result


def _check_checksums(dest: Path, result: Verification) -> None:
    for relative, expected in sorted(result.manifest.get("files", {}).items()):
        path = dest / relative
        if not path.is_file():
            result.problems.append(f"{relative}: missing")
            continue
        digest, size = sha256_file(path)
        result.files_checked += 1
        result.bytes_checked += size
        if (digest, size) != (expected["sha256"], expected["size"]):
            result.problems.append(f"{relative}: checksum mismatch")


def _check_strays(dest: Path, result: Verification) -> None:
    listed = set(result.manifest.get("files", {}))
    for folder in (DB_DIR, BLOB_DIR):
        if not (dest / folder).is_dir():
            continue
        for entry in sorted((dest / folder).iterdir()):
            relative = f"{folder}/{entry.name}"
            if relative not in listed:
                result.problems.append(f"{relative}: not in the manifest")


def _check_records_have_blobs(dest: Path, result: Verification) -> None:
    listing: dict[str, Any] = result.manifest.get("blobs", {})
    copied = bool(result.manifest.get("blobsCopied"))
    try:
        for doc in restorable_files(dest, result.manifest):
            result.records_checked += 1
            for name in file_blob_names(doc):
                if name not in listing:
                    result.problems.append(f"file {doc['_id']}: blob {name} is not in the "
                                           "backup's listing")
                elif copied and not (dest / BLOB_DIR / name).is_file():
                    result.problems.append(f"file {doc['_id']}: blob {name} is missing")
    except (BackupError, KeyError, TypeError) as exc:
        result.problems.append(f"{DB_DIR}/files.jsonl: unreadable: {exc}")

"""`vault-admin backup verify` and restore's check: a backup is what vaultd wrote, whole.

Three layers, each catching what the one before cannot:

1. the manifest's MAC under the master key (`backup_seal`): nobody without the key can change
   the manifest, so its checksums and listing are the ones vaultd wrote;
2. every file's sha256 and size against that manifest, no stray file, every restorable file
   record's blob present (`backup_manifest.verify_backup`);
3. every copied blob decrypted and authenticated chunk by chunk (AES-GCM tags, the key
   commitment, the final chunk and the length), streaming, as `storage verify` reads a
   stored blob: the bytes are dropped, memory stays at one read segment. A blob whose
   checksum already failed is not read again. A listing-only backup (cloud storage) holds no
   blob: its blobs are checked in the storage by `vault-admin storage verify` after restore.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from backends.local import LocalBackend
from vaultd.crypto.blob_format import BlobCorrupt
from vaultd.crypto.keyring import KeyUnavailable, MasterKeyring
from vaultd.records import FileDoc
from vaultd.services.files import renditions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.storage.backup_manifest import (
    BLOB_DIR,
    BackupError,
    Verification,
    restorable_files,
    verify_backup,
)
from vaultd.services.storage.backup_seal import MAC_FIELD, mac_problem
from vaultd.services.storage.storage_tools import check_blob


async def verify_authentic(dest: Path, ring: MasterKeyring,
                           accept_unauthenticated: bool = False) -> Verification:
    """Every problem of the backup in `dest`, the MAC's first."""
    result = verify_backup(dest)
    problem = mac_problem(result.manifest, ring, accept_unauthenticated)
    if problem is not None:
        result.problems.insert(0, problem)
    result.authenticated = problem is None and MAC_FIELD in result.manifest
    if result.manifest.get("blobsCopied") and (dest / BLOB_DIR).is_dir():
        await _decrypt_blobs(dest, result, ring)
    return result


def _blob_records(doc: dict[str, Any]) -> list[FileDoc]:
    """The file's own blob and, where it has one, its rendition's, each as a record."""
    records = [cast(FileDoc, doc)]
    if "rendition" in doc:
        records.append(renditions.as_file(records[0], doc["rendition"]))
    return records


async def _decrypt_blobs(dest: Path, result: Verification, ring: MasterKeyring) -> None:
    named = {problem.split(":", 1)[0] for problem in result.problems}
    store = BlobStore(LocalBackend(dest / BLOB_DIR), ring)
    try:
        for doc in restorable_files(dest, result.manifest):
            for record in _blob_records(doc):
                name = str(record["blob"]["name"])
                if f"{BLOB_DIR}/{name}" in named or not (dest / BLOB_DIR / name).is_file():
                    continue  # its checksum failed or it is missing: named already
                problem = await _decrypt_problem(store, record)
                result.blobs_decrypted += 1
                if problem is not None:
                    result.problems.append(f"{BLOB_DIR}/{name}: fails authentication "
                                           f"(file {doc['_id']}): {problem}")
    except (BackupError, KeyError, TypeError, ValueError):
        pass  # an unreadable files.jsonl is named by verify_backup already


async def _decrypt_problem(store: BlobStore, record: Any) -> str | None:
    try:
        await check_blob(store, record)
    except (BlobCorrupt, KeyUnavailable) as failure:
        return str(failure)
    return None

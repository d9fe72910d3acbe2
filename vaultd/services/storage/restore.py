"""`vault-admin restore BACKUP --data-dir NEW`: a vault rebuilt from a backup.

Nothing is written before the backup has verified (its manifest's MAC under the supplied
master key, every checksum, every copied blob's AEAD tags: `backup_verify`), the target is
known to be empty and the supplied master keyring holds every key the backup names with the
same fingerprint. Then the
file records come first (those the backup can restore: stored, with their blobs), the other
collections after them, the accounts with their usage recounted from those files (see
`vaultd.services.storage.backup` on why), and the blobs last, written through the configured backend
(local or Azure alike). `instances` (the registry of running processes) is not restored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pymongo.errors import PyMongoError

from backends.base import BlobBackend
from vaultd.config import Settings
from vaultd.crypto.key_files import write_atomic
from vaultd.crypto.keyring import KeyringError, MasterKeyring
from vaultd.db import (
    FILE_NUMBER_MIGRATION,
    LINK_COUNT_MIGRATION,
    ROOM_COUNT_MIGRATION,
    Db,
    RawDoc,
    describe_failure,
)
from vaultd.runtime import database, make_backend
from vaultd.services.accounts import link_shards_once
from vaultd.services.files import file_gaps
from vaultd.services.links import link_numbers
from vaultd.services.members import activity_numbers
from vaultd.services.rooms import room_numbers
from vaultd.services.storage.backup import COPY_PIECE, LAST
from vaultd.services.storage.backup_manifest import (
    BLOB_DIR,
    BackupError,
    collection_path,
    file_blob_names,
    read_docs,
    read_manifest,
    restorable_files,
)
from vaultd.services.storage.backup_verify import verify_authentic
from vaultd.services.storage.storage_tools import existing_keyring
from vaultd.services.webhooks import delivery_numbers
from vaultd.startup import DataDirLock, prepare_data_dir

INSERT_BATCH = 200
# `instances`: the processes of the old vault (recovery would wait for them); `migrations`:
# vaultd's own marks, made when it opens a database (restore's target has them already).
SKIPPED = ("instances", "migrations")


async def verified_manifest(backup: Path, ring: MasterKeyring,
                            accept_unauthenticated: bool = False) -> dict[str, Any]:
    """The manifest of a backup that verifies (its MAC, checksums and blobs' tags); otherwise
    BackupError naming the first problems."""
    result = await verify_authentic(backup, ring, accept_unauthenticated)
    if result.problems:
        shown = "; ".join(result.problems[:3])
        more = f" (and {len(result.problems) - 3} more)" if len(result.problems) > 3 else ""
        raise BackupError(f"backup {backup} does not verify: {shown}{more}")
    return result.manifest


def check_master_key(manifest: dict[str, Any], ring: MasterKeyring) -> None:
    """Every key the backup names must be in `ring` with the same fingerprint."""
    expected: dict[str, str] = manifest.get("masterKey", {}).get("fingerprints", {})
    supplied = ring.fingerprints()
    for key_id, fingerprint in sorted(expected.items()):
        if key_id not in supplied:
            raise BackupError(f"the master key does not match the backup: it has no key "
                              f"{key_id} (fingerprint {fingerprint})")
        if supplied[key_id] != fingerprint:
            raise BackupError(f"the master key does not match the backup: key {key_id} has "
                              f"fingerprint {supplied[key_id]}, the backup {fingerprint}")


def check_empty_dir(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise BackupError(f"{path} is not empty: restore needs a new, empty data directory")


async def check_empty_database(db: Db) -> None:
    for name in sorted(await db.database.list_collection_names()):
        if name.startswith("system.") or name in SKIPPED:
            continue
        if await db.raw(name).find_one({}, {"_id": 1}):
            raise BackupError(f"database {db.database.name} is not empty (collection {name}): "
                              "restore needs an empty database")


def _batches(docs: Iterable[RawDoc]) -> Iterator[list[RawDoc]]:
    batch: list[RawDoc] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == INSERT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def _validated(db: Db, name: str) -> bool:
    """Whether the target's collection `name` carries a validator: the logs' fence
    (services.common.log_fence) where a sequencer ran on the empty target before."""
    listed = await db.database.list_collections(filter={"name": name})
    return any([spec.get("options", {}).get("validator") async for spec in listed])


async def _insert(db: Db, name: str, docs: Iterable[RawDoc]) -> int:
    count = 0
    # The fence refuses entries stamped before its horizon, which every restored entry is; the
    # records are what the backup verified, so the validator is not applied to them. Only
    # where there is one: bypassing needs a privilege MongoDB's readWrite role lacks.
    bypass = await _validated(db, name)
    for batch in _batches(docs):
        await db.raw(name).insert_many(batch, ordered=True, bypass_document_validation=bypass)
        count += len(batch)
    return count


class FileTally:
    """The restored files' ids and each account's usage, counted as the records stream past."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.usage: dict[str, dict[str, int]] = {}

    def counted(self, files: Iterable[RawDoc]) -> Iterator[RawDoc]:
        for doc in files:
            self.ids.add(str(doc["_id"]))
            entry = self.usage.setdefault(doc["accountId"], {"documents": 0, "storageBytes": 0})
            entry["documents"] += 1
            entry["storageBytes"] += int(doc["size"])
            yield _without(doc, "linkCount")


def _accounts(backup: Path, usage: dict[str, dict[str, int]]) -> Iterator[RawDoc]:
    for doc in read_docs(collection_path(backup, "accounts")):
        # Reservations and deletions in progress ended with the old vault.
        # Numbers known to hold no file are forgotten: the files were copied at another moment.
        yield {**_without(doc, "linkCount", file_gaps.FIELD),
               "usage": usage.get(doc["_id"], {"documents": 0, "storageBytes": 0}),
               "pendingUploads": [], "pendingDeletes": []}


def _without(doc: RawDoc, *fields: str) -> RawDoc:
    return {key: value for key, value in doc.items() if key not in fields}


def _others(backup: Path, name: str, file_ids: set[str]) -> Iterator[RawDoc]:
    for doc in read_docs(collection_path(backup, name)):
        if name == "links" and doc.get("fileId") not in file_ids:
            continue  # the link of a file deleted while the backup ran
        yield doc


async def import_database(db: Db, backup: Path, manifest: dict[str, Any]) -> dict[str, int]:
    tally = FileTally()
    counts = {"files": await _insert(db, "files", tally.counted(
        restorable_files(backup, manifest)))}
    for name in sorted(manifest.get("collections", {})):
        if name in LAST or name in SKIPPED:
            continue
        counts[name] = await _insert(db, name, _others(backup, name, tally.ids))
    if collection_path(backup, "accounts").exists():
        counts["accounts"] = await _insert(db, "accounts", _accounts(backup, tally.usage))
    # Live-link counts left the records (a left-out file's links are gone): the restored
    # vault's first start counts them once again (`db_indexes.count_links_once`), and numbers
    # the files (and links) of a backup made before they were numbered (`number_files_once`,
    # `link_numbers.number_links_once`), the activity events and the webhook deliveries
    # (`activity_numbers.number_activity_once`, `delivery_numbers.number_deliveries_once`), and
    # gives links of a backup made before shards theirs (`link_shards_once`) and its rooms
    # their numbers (`room_numbers.number_rooms_once`).
    await db.raw("migrations").delete_many(
        {"_id": {"$in": [LINK_COUNT_MIGRATION, ROOM_COUNT_MIGRATION, FILE_NUMBER_MIGRATION,
                         link_numbers.LINK_NUMBER_MIGRATION,
                         activity_numbers.ACTIVITY_NUMBER_MIGRATION,
                         activity_numbers.ACTION_NUMBER_MIGRATION,
                         delivery_numbers.DELIVERY_NUMBER_MIGRATION,
                         link_shards_once.SHARD_MIGRATION,
                         room_numbers.ROOM_NUMBER_MIGRATION]}})
    return counts


async def _write_blob(backend: BlobBackend, source: Path) -> None:
    writer = await backend.open_writer(source.name)
    try:
        with open(source, "rb") as blob:
            while piece := blob.read(COPY_PIECE):
                await writer.write(piece)
        await writer.commit()
    except BaseException:
        await writer.abort()
        raise


async def restore_blobs(backend: BlobBackend, backup: Path,
                        manifest: dict[str, Any]) -> dict[str, Any]:
    """Copied blobs are written to the backend; a listing-only backup's blobs must already be
    in the configured storage (the operator copied the container): they are checked."""
    names = [name for doc in restorable_files(backup, manifest) for name in file_blob_names(doc)]
    absent: list[str] = []
    for name in names:
        if manifest.get("blobsCopied"):
            await _write_blob(backend, backup / BLOB_DIR / name)
        elif not await backend.exists(name) or \
                await backend.size(name) != manifest["blobs"][name]["size"]:
            absent.append(name)
    written = len(names) if manifest.get("blobsCopied") else 0
    return {"blobs": len(names), "written": written, "absentFromStorage": absent}


# --- the whole restore --------------------------------------------------------------------------


def supplied_keyring(settings: Settings, key_file: Path | None) -> MasterKeyring:
    if key_file is None:
        if not settings.master_key_value and not settings.master_key_path.exists():
            raise BackupError("no master key: a backup never holds it; give the vault's key "
                              "file with --master-key-file (or set master_key.file or "
                              "VAULTD_MASTER_KEY)")
        return existing_keyring(settings)
    try:
        return MasterKeyring.load(key_file)
    except FileNotFoundError:
        raise BackupError(f"--master-key-file {key_file}: no such file") from None
    except KeyringError as exc:
        raise BackupError(str(exc)) from None


def key_destination(settings: Settings, key_file: Path | None) -> Path | None:
    """Where the supplied key file is copied for the restored vaultd to find it, if anywhere."""
    if key_file is None or settings.master_key_value:
        return None
    target = settings.master_key_path
    if target.exists() and target.resolve() != key_file.resolve():
        raise BackupError(f"master key file {target} exists already: leave out "
                          "--master-key-file to use it, or point master_key.file elsewhere")
    return None if target.exists() else target


async def _restore_into(settings: Settings, backup: Path, manifest: dict[str, Any],
                        ring: MasterKeyring, key_target: Path | None) -> dict[str, Any]:
    async with database(settings) as db:
        await check_empty_database(db)
        if key_target is not None:
            write_atomic(key_target, ring.serialize(), replace=False)
        try:
            counts = await import_database(db, backup, manifest)
        except PyMongoError as exc:
            raise BackupError(_stopped_part_way(settings, db.database.name, exc)) from exc
    backend = make_backend(settings)
    try:
        await backend.start()
        blobs = await restore_blobs(backend, backup, manifest)
    finally:
        await backend.close()
    return {"collections": counts, **blobs}


def _stopped_part_way(settings: Settings, database_name: str, exc: PyMongoError) -> str:
    """The records already inserted stay: the next restore refuses a database that is not
    empty, so the operator is told what to empty (a restore checks first, then only adds)."""
    where = (f"database {database_name} holds" if settings.mongodb_uri
             else f"{settings.data_path} holds")
    fix = (f"drop database {database_name} (or name an empty one)" if settings.mongodb_uri
           else "remove that directory's contents")
    return (f"the restore stopped part way ({describe_failure(exc)}): {where} part of the "
            f"backup; {fix}, then restore again")


async def restore_vault(settings: Settings, backup: Path, key_file: Path | None,
                        accept_unauthenticated: bool = False) -> dict[str, Any]:
    """Check everything that can be checked first, then rebuild the vault in `settings`. The
    key's fingerprints are compared before the MAC is: a wrong key is named as such, not as a
    manifest that fails its MAC."""
    claimed = read_manifest(backup)  # not a backup: said before the key is asked for
    if not settings.mongodb_uri or settings.storage_backend == "local":
        check_empty_dir(settings.data_path)
    ring = supplied_keyring(settings, key_file)
    check_master_key(claimed, ring)
    manifest = await verified_manifest(backup, ring, accept_unauthenticated)
    key_target = key_destination(settings, key_file)
    lock = DataDirLock(prepare_data_dir(settings), "vault-admin").acquire()
    try:
        result = await _restore_into(settings, backup, manifest, ring, key_target)
    finally:
        lock.release()
    return {"dataDir": str(settings.data_path.resolve()),
            "database": "mongodb.uri" if settings.mongodb_uri else "embedded",
            "storageBackend": settings.storage_backend,
            "masterKeyFile": str(key_target.resolve()) if key_target else None,
            "vaultVersion": manifest.get("vaultVersion"),
            "backupFinishedAt": manifest.get("finishedAt"), **result}

"""`vault-admin backup DEST`: a consistent copy of a vault while vaultd keeps serving.

Consistency without a database snapshot rests on three facts of how vaultd writes:

1. A blob is committed before its file record is inserted, and never changes afterwards.
2. An access-log entry, link, key or statistic is written only after its file or account exists.
3. Accounts are never deleted; a file is deleted by removing its links and blob, then its record.
4. The access log's numbers trail its entries (`services.common.log_numbering`): a round
   raises its counters, numbers entries, then moves its horizon; the walk of the older entries
   (`older_log_numbering`) lowers its counters, numbers entries, then moves its place below
   them. So the numbering's state (the horizon's record) is read first, then the counters,
   then the log: every entry between the exported place and horizon has its number within the
   exported counters, and an entry numbered after them lies past that horizon or below that
   place, where reads take entries by time and the next round or step numbers them again, in
   the same order, as after a crash.

So the collections are exported one after another, `number_counters` first, then every other
collection, then `files`, then `accounts` (each record's file and account are then in the
backup), and the blobs are read last: every file record exported has its blob committed
already. A file deleted between its export and its blob's copy is named in the manifest
(`deletedDuringBackup`) and left out by restore. Usage counters read at different moments
from the files cannot be exact, so restore recounts them from the restored files.

Each collection is read in bounded batches: the collections that grow with use (`db.WALKS`)
in closed `_id` windows of about 200 documents (`services.common.id_ranges`; `number_counters`
kind by kind, `db.WALK_SPACES`), the few small others
by `_id > last` (sorted, limited), so no single query holds the embedded database for long.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from backends.base import BlobBackend
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import WALK_SPACES, WALKS, Db, RawDoc
from vaultd.services.common import id_ranges, numbered_log
from vaultd.services.storage import health
from vaultd.services.storage.backup_manifest import (
    BLOB_DIR,
    DB_DIR,
    FORMAT,
    BackupError,
    collection_path,
    encode_doc,
    file_blob_names,
    restorable_files,
    sha256_file,
    write_manifest,
)
from vaultd.services.storage.backup_seal import sealed
from vaultd.timefmt import utcnow

BATCH_DOCUMENTS = 200
# For the small collections outside `db.WALKS` only: SecantusDB still reads the whole collection
# for each such batch (docs/operations.md, "Backup and restore").
ID_INDEX = [("_id", 1)]
COPY_PIECE = 4 << 20  # bytes per ranged read of a blob
FIRST = ("number_counters",)  # exported before every other collection
# Records read before the rest of their collection: the access log's numbering state (fact 4).
FIRST_RECORDS = {"number_counters": (numbered_log.HORIZON,)}
LAST = ("files", "accounts")  # exported in this order, after every other collection
ORDERING = ("number_counters, then collections other than files and accounts, then files, "
            "then accounts, then the blobs of the exported file records (a blob is committed "
            "before its record)")


def export_order(names: list[str]) -> list[str]:
    rest = sorted(n for n in names
                  if n not in FIRST + LAST and not n.startswith("system."))
    return ([name for name in FIRST if name in names] + rest
            + [name for name in LAST if name in names])


async def document_batches(collection: AsyncCollection[RawDoc],
                           size: int | None = None) -> AsyncIterator[list[RawDoc]]:
    """The whole collection in `_id` order, `size` documents per query (None: BATCH_DOCUMENTS,
    read at the call)."""
    if size is None:
        size = BATCH_DOCUMENTS
    last: Any = None
    while True:
        query = {} if last is None else {"_id": {"$gt": last}}
        cursor = collection.find(query).sort("_id", 1).hint(ID_INDEX).limit(size)
        batch = await cursor.to_list()
        if batch:
            yield batch
        if len(batch) < size:
            return
        last = batch[-1]["_id"]


def collection_batches(collection: AsyncCollection[RawDoc]) -> AsyncIterator[list[RawDoc]]:
    """Bounded windows where the collection has the index they need, else `_id > last`."""
    walk = WALKS.get(collection.name)
    if walk is None:
        return document_batches(collection)
    spaces = [id_ranges.KeySpace(prefix, alphabet)
              for prefix, alphabet in WALK_SPACES.get(collection.name, ())]
    return id_ranges.batches(collection, prefix=walk[1], size=BATCH_DOCUMENTS, spaces=spaces)


async def export_collection(collection: AsyncCollection[RawDoc], path: Path) -> int:
    count = 0
    first = FIRST_RECORDS.get(collection.name, ())
    with open(path, "x", encoding="utf-8") as out:
        if first:
            docs = await collection.find({"_id": {"$in": list(first)}}).to_list()
            out.write("".join(encode_doc(doc) + "\n" for doc in docs))
            count += len(docs)
        async for batch in collection_batches(collection):
            kept = [doc for doc in batch if doc["_id"] not in first]
            out.write("".join(encode_doc(doc) + "\n" for doc in kept))
            count += len(kept)
        out.flush()
        os.fsync(out.fileno())
    return count


def prepare_destination(dest: Path, copy_blobs: bool) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} is not empty: back up into a new or empty directory")
    try:
        dest.mkdir(mode=0o700, parents=True, exist_ok=True)
        (dest / DB_DIR).mkdir(mode=0o700)
        if copy_blobs:
            (dest / BLOB_DIR).mkdir(mode=0o700)
    except OSError as exc:
        raise BackupError(f"{dest}: cannot create: {exc.strerror or exc}") from None


async def fetch_blob(backend: BlobBackend, name: str, target: Path | None) -> dict[str, Any]:
    """sha256 and size of one blob, streamed; with a target, also a copy of it.
    FileNotFoundError when the blob is gone (then no partial copy is left)."""
    digest, size = hashlib.sha256(), await backend.size(name)
    out = open(target, "xb") if target is not None else None  # noqa: SIM115 - closed below
    try:
        offset = 0
        while offset < size:
            piece = await backend.read_range(name, offset, COPY_PIECE)
            if not piece:
                raise FileNotFoundError(name)  # shrank under us: only a deletion does that
            digest.update(piece)
            if out is not None:
                out.write(piece)
            offset += len(piece)
        if out is not None:
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        if out is not None and target is not None:
            out.close()
            target.unlink(missing_ok=True)
        raise
    finally:
        if out is not None:
            out.close()
    return {"sha256": digest.hexdigest(), "size": size}


class BlobCopy:
    """The blobs of the exported file records: copied (local) or only listed (cloud)."""

    def __init__(self, db: Db, backend: BlobBackend, dest: Path, copy: bool) -> None:
        self.db, self.backend, self.dest, self.copy = db, backend, dest, copy
        self.listing: dict[str, dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.missing: list[dict[str, str]] = []

    def _target(self, name: str) -> Path | None:
        return self.dest / BLOB_DIR / name if self.copy else None

    async def take(self, doc: dict[str, Any]) -> None:
        taken: dict[str, dict[str, Any]] = {}
        for name in file_blob_names(doc):
            try:
                taken[name] = await fetch_blob(self.backend, name, self._target(name))
            except FileNotFoundError:
                await self._gone(doc, name, taken)
                return
        self.listing.update(taken)

    async def _gone(self, doc: dict[str, Any], name: str, taken: dict[str, Any]) -> None:
        for copied in taken:  # a file deleted half way leaves nothing of it in the backup
            target = self._target(copied)
            if target is not None:
                target.unlink(missing_ok=True)
        still = await self.db.files.find_one({"_id": doc["_id"], "state": "stored"}, {"_id": 1})
        if still is None:
            self.deleted.append(str(doc["_id"]))
        else:
            self.missing.append({"fileId": str(doc["_id"]), "blob": name})


def _checksums(dest: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for folder in (DB_DIR, BLOB_DIR):
        if (dest / folder).is_dir():
            for entry in sorted((dest / folder).iterdir()):
                digest, size = sha256_file(entry)
                out[f"{folder}/{entry.name}"] = {"sha256": digest, "size": size}
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def create_backup(db: Db, backend: BlobBackend, keyring: Callable[[], MasterKeyring],
                        dest: Path, version: str) -> dict[str, Any]:
    """Export every collection, then the blobs, then write the manifest with its MAC under the
    current master key. `keyring` is read after the export, so a key added meanwhile is named
    too."""
    copy = backend.name == "local"
    prepare_destination(dest, copy)
    started = _now()
    collections: dict[str, int] = {}
    for name in export_order(await db.database.list_collection_names()):
        collections[name] = await export_collection(db.raw(name), collection_path(dest, name))
    blobs = BlobCopy(db, backend, dest, copy)
    for doc in restorable_files(dest, {}):
        await blobs.take(doc)
    ring = keyring()
    manifest = {
        "format": FORMAT, "vaultVersion": version, "startedAt": started, "finishedAt": _now(),
        "database": db.database.name, "storageBackend": backend.name, "blobsCopied": copy,
        "ordering": ORDERING, "collections": collections,
        "masterKey": {"currentId": ring.current_id, "fingerprints": ring.fingerprints()},
        "blobs": blobs.listing, "deletedDuringBackup": blobs.deleted,
        "missingBlobs": blobs.missing, "files": _checksums(dest),
    }
    write_manifest(dest, sealed(manifest, ring))
    await health.record_backup(db, dest, utcnow())  # what `vault-admin doctor` reports
    blob_bytes = sum(entry["size"] for entry in blobs.listing.values())
    return {"dest": str(dest.resolve()), "collections": collections,
            "blobs": len(blobs.listing), "blobBytes": blob_bytes,
            "blobsCopied": copy, "deletedDuringBackup": blobs.deleted,
            "missingBlobs": blobs.missing, "masterKeyId": ring.current_id}

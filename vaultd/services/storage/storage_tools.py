"""Storage integrity and housekeeping, behind `vault-admin storage verify | gc | migrate`.

- **verify**: every stored file's blob exists and decrypts and authenticates completely. It is
  read as downloads read it (length, key commitment and final chunk first, then every chunk in
  order, one segment per backend read), so memory stays flat whatever the file size.
- **gc**: removes blobs that no file record points to: the leftovers of a process that died
  between committing a blob and writing its record. Blobs of uploads in flight are never
  touched: a blob younger than `older_than`, or named in any account's `pendingUploads` (pushed
  before the commit, pulled only after the record exists), is kept. Records whose blob is gone
  (the reverse case) are reported, not changed.
- **migrate**: copies every file's blob to another backend under the same name and verifies the
  copy completely. A blob already present and intact there is skipped, so re-running is safe.

Each step re-reads the database right before it acts, so these tools can run while vaultd
processes serve requests. Records are read in closed `_id` windows of about 200
(`services.common.id_ranges`), never in one query over every file, so vaultd's requests get the
embedded database between two reads; the three are idempotent, so an interrupted run is run
again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from backends.base import BlobBackend
from vaultd.config import ConfigError, Settings
from vaultd.crypto.blob_format import BlobCorrupt
from vaultd.crypto.keyring import KeyringError, KeyUnavailable, MasterKeyring
from vaultd.db import Db
from vaultd.records import FileDoc
from vaultd.services.accounts import accounts
from vaultd.services.common import id_ranges
from vaultd.services.files import renditions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.files.files import is_uuid

COPY_PIECE = 4 << 20  # bytes per ranged read while copying a blob between backends


def existing_keyring(settings: Settings) -> MasterKeyring:
    """The configured keyring; unlike vaultd's start-up, never creates a key file."""
    try:
        if settings.master_key_value:
            return MasterKeyring.parse(settings.master_key_value, "VAULTD_MASTER_KEY")
        return MasterKeyring.load(settings.master_key_path)
    except FileNotFoundError:
        raise ConfigError(f"config: master key file {settings.master_key_path} does not exist "
                          "(set master_key.file or VAULTD_MASTER_KEY)") from None
    except KeyringError as exc:
        raise ConfigError(str(exc)) from None


def _file_entry(doc: FileDoc, problem: str | None = None) -> dict[str, Any]:
    entry = {"fileId": doc["_id"], "accountId": doc["accountId"], "blob": doc["blob"]["name"]}
    return {**entry, "problem": problem} if problem else entry


async def check_blob(store: BlobStore, doc: FileDoc) -> None:
    """Decrypt and authenticate the whole blob of `doc`, streaming.

    FileNotFoundError when it is missing; BlobCorrupt or KeyUnavailable when it fails."""
    opener = await store.open_plaintext(doc)
    total = 0
    async for piece in store.iter_plaintext(doc, opener):
        total += len(piece)
    if total != int(doc["size"]):
        raise BlobCorrupt(f"decrypted {total} bytes, the record says {doc['size']}")


async def _stored_files(db: Db, account_id: str | None) -> AsyncIterator[FileDoc]:
    """Every stored file (of one account), window by window: the state and account are checked
    here, so each read is the `(_id, state)` index's range alone."""
    async for batch in id_ranges.batches(db.files):
        for doc in batch:
            if doc.get("state") == "stored" and account_id in (None, doc["accountId"]):
                yield doc


# --- verify -------------------------------------------------------------------------------------


@dataclass
class VerifyReport:
    checked: int = 0
    missing: list[dict[str, Any]] = field(default_factory=list)
    corrupt: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.corrupt

    def to_json(self) -> dict[str, Any]:
        healthy = self.checked - len(self.missing) - len(self.corrupt)
        return {"checked": self.checked, "ok": healthy, "missing": self.missing,
                "corrupt": self.corrupt}


async def verify(db: Db, store: BlobStore, account_id: str | None = None) -> VerifyReport:
    """Check every stored file (of one account, if given). BackendUnavailable stops the run."""
    if account_id is not None:
        await accounts.get_account(db, account_id)  # NotFound for an unknown account
    report = VerifyReport()
    async for doc in _stored_files(db, account_id):
        report.checked += 1
        try:
            await check_blob(store, doc)
        except FileNotFoundError:
            report.missing.append(_file_entry(doc))
        except (BlobCorrupt, KeyUnavailable) as exc:
            report.corrupt.append(_file_entry(doc, f"{type(exc).__name__}: {exc}"))
    return report


# --- gc -----------------------------------------------------------------------------------------


async def _in_flight(db: Db) -> set[str]:
    names: set[str] = set()
    async for batch in id_ranges.batches(db.raw(db.accounts.name), {"pendingUploads.id": 1}):
        for account in batch:
            names.update(entry["id"] for entry in account.get("pendingUploads", []))
    return names


_RECORD_FIELDS = {"accountId": 1, "state": 1, "blob.name": 1, "rendition.name": 1}


async def _unreferenced(db: Db, listed: set[str]) -> tuple[set[str], list[FileDoc]]:
    """The listed blob names no record points to (any state: a file being deleted still owns
    its blob), and the stored records whose blob is not listed. Holds the names, never every
    record: the records are read window by window."""
    unreferenced, without_blob = set(listed), []
    async for batch in id_ranges.batches(db.files, _RECORD_FIELDS):
        for doc in batch:
            unreferenced.discard(doc["blob"]["name"])
            # an image's second blob (services.files.renditions), not reported
            if "rendition" in doc:
                unreferenced.discard(doc["rendition"]["name"])
            if doc.get("state") == "stored" and doc["blob"]["name"] not in listed:
                without_blob.append(doc)
    return unreferenced, without_blob


def _owner_id(name: str) -> str:
    """The file id a blob name belongs to: itself, or the file of a rendition."""
    return name.removesuffix(renditions.SUFFIX)


async def _still_unowned(db: Db, name: str) -> bool:
    # Re-checked just before deleting, for records written since the snapshot: a new blob is
    # named after its file id (see BlobStore.begin).
    owner = _owner_id(name)
    if await db.files.find_one({"_id": owner} if owner == name else
                               {"_id": owner, "rendition.name": name}, {"_id": 1}):
        return False
    return await db.accounts.find_one({"pendingUploads.id": owner}, {"_id": 1}) is None


async def _records_without_blob(db: Db, backend: BlobBackend, candidates: list[FileDoc]
                                 ) -> list[dict[str, Any]]:
    missing = []
    for doc in candidates:  # renditions are not reported here (`migrate` copies them)
        # Uploaded after the listing, or deleted meanwhile? Ask again before reporting.
        still = await db.files.find_one({"_id": doc["_id"], "state": "stored"}, {"_id": 1})
        if still and not await backend.exists(doc["blob"]["name"]):
            missing.append(_file_entry(doc))
    return missing


async def gc(db: Db, backend: BlobBackend, older_than_seconds: float,
             dry_run: bool = False) -> dict[str, Any]:
    """Remove orphan blobs older than `older_than_seconds`; report records without a blob."""
    cutoff = time.time() - older_than_seconds
    listing = await backend.list_names()
    # Pending uploads before records: an upload moves from the first to the second, never back.
    in_flight = await _in_flight(db)
    listed = {name for name, _ in listing}
    unreferenced, without_blob = await _unreferenced(db, listed)
    orphans, young, foreign = [], [], []
    for name, modified in sorted(listing):
        if name not in unreferenced or _owner_id(name) in in_flight:
            continue
        if not is_uuid(_owner_id(name)):
            foreign.append(name)  # not a name vaultd gives: not ours to delete
        elif modified >= cutoff:
            young.append(name)
        elif dry_run or (await _still_unowned(db, name) and await backend.delete(name)):
            orphans.append(name)
    temporaries = 0 if dry_run else await backend.sweep_temporaries(older_than_seconds)
    return {
        "dryRun": dry_run, "olderThanSeconds": older_than_seconds, "blobs": len(listing),
        "orphans": orphans, "keptYoung": young, "keptInFlight": len(in_flight & listed),
        "foreign": foreign, "temporariesRemoved": temporaries,
        "missingBlobs": await _records_without_blob(db, backend, without_blob),
    }


# --- migrate ------------------------------------------------------------------------------------


async def copy_blob(source: BlobBackend, target: BlobBackend, name: str) -> int:
    """Stream one blob across backends; nothing is visible in `target` until it is complete."""
    size = await source.size(name)
    writer = await target.open_writer(name)
    try:
        for offset in range(0, size, COPY_PIECE):
            await writer.write(await source.read_range(name, offset, COPY_PIECE))
        return await writer.commit()
    except BaseException:
        await writer.abort()
        raise


async def _intact(store: BlobStore, doc: FileDoc) -> bool:
    try:
        await check_blob(store, doc)
        return True
    except (FileNotFoundError, BlobCorrupt):
        return False


async def _migrate_one(source: BlobBackend, target: BlobStore, doc: FileDoc) -> bool:
    """True if copied, False if an intact copy was already there. Raises when it fails."""
    if await _intact(target, doc):
        return False
    name = doc["blob"]["name"]
    await copy_blob(source, target.backend, name)
    try:
        await check_blob(target, doc)
    except BlobCorrupt:
        await target.backend.delete(name)  # never leave a bad copy to be mistaken for good
        raise
    return True


async def migrate(db: Db, keyring: MasterKeyring, source: BlobBackend,
                  target: BlobBackend) -> dict[str, Any]:
    """Copy and verify every stored file's blob from `source` to `target`."""
    store = BlobStore(target, keyring)
    copied = present = 0
    failed: list[dict[str, Any]] = []
    async for doc in _stored_files(db, None):
        try:
            if await _migrate_one(source, store, doc):
                copied += 1
            else:
                present += 1
            if "rendition" in doc:  # pages of the image are rendered from it
                await _migrate_one(source, store, renditions.as_file(doc, doc["rendition"]))
        except FileNotFoundError:
            if await db.files.find_one({"_id": doc["_id"], "state": "stored"}, {"_id": 1}):
                failed.append(_file_entry(doc, f"blob missing in {source.name}"))
        except (BlobCorrupt, KeyUnavailable) as exc:
            failed.append(_file_entry(doc, f"{type(exc).__name__}: {exc}"))
    return {"from": source.name, "to": target.name, "files": copied + present + len(failed),
            "copied": copied, "alreadyPresent": present, "failed": failed}

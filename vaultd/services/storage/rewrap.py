"""Master key rotation: a new current key, every data key re-wrapped, blobs untouched.

The new keyring is saved before any record changes, so an interrupted rotation leaves every
file readable (old and new keys are both in the ring) and re-running it finishes the job.
Running vaultd processes read the keyring file again whenever it changes; an upload in flight
keeps its data key in memory and wraps it when it writes its record (`services.files.uploads`).
Records are read in closed `_id` windows (`services.common.id_ranges`) and each re-wrap is an update
of one record by `_id`: no database operation grows with the vault.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from vaultd.config import Settings
from vaultd.crypto.keyring import MasterKeyring, WrappedKey
from vaultd.db import Db
from vaultd.services.common import id_ranges
from vaultd.services.files.renditions import rendition_id
from vaultd.services.pages import mark_key
from vaultd.services.webhooks.webhooks import webhook_binding

DROP_GRACE_SECONDS = 2.0
# A key kept by a package above this one (the audit log's signing key): passed in by the caller.
Rewrap = Callable[[Db, MasterKeyring], Awaitable[int]]


async def rotate_master_key(settings: Settings, db: Db, drop_old: bool,
                            also: Sequence[Rewrap] = ()) -> dict[str, Any]:
    if settings.master_key_value:
        raise ValueError(
            "the master key comes from VAULTD_MASTER_KEY; rotation rewrites the keyring file, "
            "so configure master_key.file (or unset VAULTD_MASTER_KEY) to rotate"
        )
    path = settings.master_key_path
    ring = MasterKeyring.load(path).with_new_current()
    ring.save(path)
    rewrapped = await rewrap_all(db, ring, also)
    old: list[str] = []
    if drop_old:
        # Running vaultd processes seal an upload's data key when they write its record, under
        # the key current then (they read the key file again when it changes): a record written
        # by a process that had not yet seen the new file can land after the pass above, so
        # wait out the records kept in memory (services.common.recent) and pass again.
        await asyncio.sleep(DROP_GRACE_SECONDS)
        rewrapped += await rewrap_all(db, ring, also)
        old = [key_id for key_id in ring.ids if key_id != ring.current_id]
        kept = ring.without(old)
        kept.save(path)
        # One last pass with the old keys still in memory: a record written since is sealed
        # again by its upload once it sees the old keys gone (services.files.uploads), or found
        # here.
        rewrapped += await rewrap_all(db, ring, also)
        ring = kept
    return {"currentKeyId": ring.current_id, "rewrapped": rewrapped, "keyIds": list(ring.ids),
            "droppedKeyIds": old}


async def rewrap_all(db: Db, ring: MasterKeyring, also: Sequence[Rewrap] = ()) -> int:
    return (await _rewrap_file_keys(db, ring) + await rewrap_webhook_secrets(db, ring)
            + await mark_key.rewrap_mark_key(db, ring)
            + sum([await rewrap(db, ring) for rewrap in also]))


async def _rewrap_file_keys(db: Db, ring: MasterKeyring) -> int:
    """The blob's data key of every file, and its rendition's (an image's second blob, bound to
    `<file id>.rendition`)."""
    count = 0
    projection = {"accountId": 1, "blob.key": 1, "rendition.key": 1}
    async for batch in id_ranges.batches(db.raw(db.files.name), projection):
        for doc in batch:
            for section, binding in (("blob", _file_binding), ("rendition", _rendition_binding)):
                count += await _rewrap_file_key(db, ring, doc, section, binding(doc["_id"]))
    return count


async def _rewrap_file_key(db: Db, ring: MasterKeyring, doc: dict[str, Any], section: str,
                           binding: str) -> int:
    stored = doc.get(section, {}).get("key", {})
    if stored.get("key_id") in (None, ring.current_id):
        return 0
    new = ring.rewrap(WrappedKey.from_doc(stored), file_id=binding, account_id=doc["accountId"])
    # Conditional on the old value: a concurrent rotation can't be overwritten silently.
    result = await db.files.update_one({"_id": doc["_id"], f"{section}.key": stored},
                                       {"$set": {f"{section}.key": new.to_doc()}})
    return int(result.modified_count)


def _file_binding(file_id: str) -> str:
    return file_id


def _rendition_binding(file_id: str) -> str:
    return rendition_id(file_id)


async def rewrap_webhook_secrets(db: Db, ring: MasterKeyring) -> int:
    """Webhook signing secrets are wrapped by the same keyring (bound to "webhook:<id>")."""
    count = 0
    endpoints = db.raw(db.webhook_endpoints.name)
    async for batch in id_ranges.batches(endpoints, {"accountId": 1, "secret": 1}, prefix="ep_"):
        count += sum([await _rewrap_secret(db, ring, doc) for doc in batch
                      if doc["secret"].get("key_id") != ring.current_id])
    return count


async def _rewrap_secret(db: Db, ring: MasterKeyring, doc: dict[str, Any]) -> int:
    old = WrappedKey.from_doc(doc["secret"])
    new = ring.rewrap(old, file_id=webhook_binding(doc["_id"]), account_id=doc["accountId"])
    result = await db.webhook_endpoints.update_one(
        {"_id": doc["_id"], "secret": doc["secret"]}, {"$set": {"secret": new.to_doc()}})
    return int(result.modified_count)

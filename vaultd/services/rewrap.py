"""Master key rotation: a new current key, every data key re-wrapped, blobs untouched.

The new keyring is saved before any record changes, so an interrupted rotation leaves every
file readable (old and new keys are both in the ring) and re-running it finishes the job.
Running vaultd processes read the keyring file again whenever it changes; an upload in flight
keeps its data key in memory and wraps it when it writes its record (`services.uploads`).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from vaultd.config import Settings
from vaultd.crypto.keyring import MasterKeyring, WrappedKey
from vaultd.db import Db
from vaultd.services import mark_key
from vaultd.services.renditions import rendition_id
from vaultd.services.webhooks import webhook_binding

DROP_GRACE_SECONDS = 2.0


async def rotate_master_key(settings: Settings, db: Db, drop_old: bool) -> dict[str, Any]:
    if settings.master_key_value:
        raise ValueError(
            "the master key comes from VAULTD_MASTER_KEY; rotation rewrites the keyring file, "
            "so configure master_key.file (or unset VAULTD_MASTER_KEY) to rotate"
        )
    path = settings.master_key_path
    ring = MasterKeyring.load(path).with_new_current()
    ring.save(path)
    rewrapped = await rewrap_all(db, ring)
    if drop_old:
        # Running vaultd processes seal an upload's data key when they write its record, under
        # the key current then (they read the key file again when it changes): a record written
        # by a process that had not yet seen the new file can land after the pass above, so
        # wait out the records kept in memory (services.recent) and pass again.
        await asyncio.sleep(DROP_GRACE_SECONDS)
        rewrapped += await rewrap_all(db, ring)
        old = [key_id for key_id in ring.ids if key_id != ring.current_id]
        kept = ring.without(old)
        kept.save(path)
        # One last pass with the old keys still in memory: a record written since is sealed
        # again by its upload once it sees the old keys gone (services.uploads), or found here.
        rewrapped += await rewrap_all(db, ring)
        ring = kept
    return {"currentKeyId": ring.current_id, "rewrapped": rewrapped, "keyIds": list(ring.ids)}


async def rewrap_all(db: Db, ring: MasterKeyring) -> int:
    return (await _rewrap_file_keys(db, ring) + await rewrap_webhook_secrets(db, ring)
            + await mark_key.rewrap_mark_key(db, ring))


async def _rewrap_file_keys(db: Db, ring: MasterKeyring) -> int:
    """The blob's data key of every file, and its rendition's (an image's second blob, bound to
    `<file id>.rendition`)."""
    count = 0
    for section, binding in (("blob", _file_binding), ("rendition", _rendition_binding)):
        query = {f"{section}.key.key_id": {"$exists": True, "$ne": ring.current_id}}
        async for doc in db.files.find(query, {"accountId": 1, f"{section}.key": 1}):
            stored = cast(dict[str, Any], doc)[section]["key"]
            new = ring.rewrap(WrappedKey.from_doc(stored), file_id=binding(doc["_id"]),
                              account_id=doc["accountId"])
            # Conditional on the old value: a concurrent rotation can't be overwritten silently.
            result = await db.files.update_one(
                {"_id": doc["_id"], f"{section}.key": stored},
                {"$set": {f"{section}.key": new.to_doc()}},
            )
            count += result.modified_count
    return count


def _file_binding(file_id: str) -> str:
    return file_id


def _rendition_binding(file_id: str) -> str:
    return rendition_id(file_id)


async def rewrap_webhook_secrets(db: Db, ring: MasterKeyring) -> int:
    """Webhook signing secrets are wrapped by the same keyring (bound to "webhook:<id>")."""
    count = 0
    query = {"secret.key_id": {"$ne": ring.current_id}}
    async for doc in db.webhook_endpoints.find(query, {"accountId": 1, "secret": 1}):
        old = WrappedKey.from_doc(doc["secret"])
        new = ring.rewrap(old, file_id=webhook_binding(doc["_id"]), account_id=doc["accountId"])
        result = await db.webhook_endpoints.update_one(
            {"_id": doc["_id"], "secret": doc["secret"]}, {"$set": {"secret": new.to_doc()}})
        count += result.modified_count
    return count

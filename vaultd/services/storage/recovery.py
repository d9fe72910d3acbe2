"""Finishing what a killed process left half done, so counters and storage stay exact.

Each vaultd process registers an instance id and refreshes it every few seconds. An upload
reservation or a deletion belonging to an instance that stopped refreshing is settled here:
reservations with a file record become usage, others are given back and their blob deleted;
claimed deletions and revoke-alls are taken over (their clean-up goes on in the background).
Every step is idempotent, so several processes may run it.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import UTC, datetime, timedelta

from vaultd.db import Db
from vaultd.records import InstanceDoc, PendingUploadDoc
from vaultd.services.accounts import quota
from vaultd.services.files import deletions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.links import revoke_jobs
from vaultd.services.rooms import room_deletions
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.recovery")

HEARTBEAT_SECONDS = 5.0
RECOVERY_EVERY_HEARTBEATS = 6  # recovery scans collections: every 30 s is soon enough
DEAD_AFTER_SECONDS = 30.0
ABANDONED_TEMP_SECONDS = 120.0  # a stalled upload is cut after the body idle timeout (30 s)
HOST = socket.gethostname()


def new_instance_id() -> str:
    return f"vaultd-{uuid.uuid4().hex[:12]}"


def _process_start(pid: int) -> str | None:
    """The kernel's start time of `pid`, so a recycled pid is not mistaken for a live vaultd."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


async def database_now(db: Db) -> datetime:
    """The database server's clock: every node compares against the same time, so clock skew
    between vaultd machines cannot make a live process look dead."""
    local = (await db.client.admin.command("hello")).get("localTime")
    if not isinstance(local, datetime):
        return utcnow()
    return local if local.tzinfo else local.replace(tzinfo=UTC)


async def heartbeat(db: Db, instance_id: str) -> None:
    pid = os.getpid()
    await db.instances.update_one(
        {"_id": instance_id},
        {"$set": {"host": HOST, "pid": pid, "started": _process_start(pid)},
         "$currentDate": {"seenAt": True}},
        upsert=True,
    )


def _gone_from_this_host(doc: InstanceDoc) -> bool:
    # On our own host we need not wait for the heartbeat to go stale: the process is visible.
    if doc.get("host") != HOST or "pid" not in doc:
        return False
    return _process_start(int(doc["pid"])) != doc.get("started")


async def forget_instance(db: Db, instance_id: str) -> None:
    await db.instances.delete_one({"_id": instance_id})


async def live_instances(db: Db, cutoff: datetime) -> set[str]:
    """Instances heard from since `cutoff` (the database's clock) that are not visibly gone."""
    cursor = db.instances.find({"seenAt": {"$gt": cutoff}})
    return {doc["_id"] async for doc in cursor if not _gone_from_this_host(doc)}


async def recover(db: Db, store: BlobStore, instance_id: str) -> int:
    """Settle the leftovers of dead instances; returns how many items were settled. Work that
    goes on after this returns (a revoke-all's marking, a deletion's clean-up) is taken over
    by `instance_id`."""
    cutoff = await database_now(db) - timedelta(seconds=DEAD_AFTER_SECONDS)
    live = await live_instances(db, cutoff)
    settled = 0
    async for account in db.accounts.find(
        {"$or": [{"pendingUploads.0": {"$exists": True}}, {"pendingDeletes.0": {"$exists": True}}]}
    ):
        for pending in account.get("pendingUploads", []):
            if pending.get("owner") not in live:
                await _settle_upload(db, store, account["_id"], pending)
                settled += 1
        for file_id in account.get("pendingDeletes", []):
            if await db.files.find_one({"_id": file_id}, {"_id": 1}) is None:
                await quota.finish_release(db, account["_id"], file_id)
                settled += 1
    settled += await deletions.resume_orphaned(db, store, live, instance_id, cutoff)
    settled += await revoke_jobs.resume_orphaned(db, live, instance_id)
    settled += await room_deletions.resume_orphaned(db, live, instance_id)
    settled += await _sweep_temporaries(store)
    if settled:
        log.info("recovery settled %d interrupted operations", settled)
    return settled


async def _sweep_temporaries(store: BlobStore) -> int:
    return await store.backend.sweep_temporaries(ABANDONED_TEMP_SECONDS)


async def _settle_upload(
    db: Db, store: BlobStore, account_id: str, pending: PendingUploadDoc
) -> None:
    file_id = pending["id"]
    if await db.files.find_one({"_id": file_id}, {"_id": 1}) is not None:
        await quota.settle_upload(db, account_id, file_id)
        return
    await store.backend.delete(file_id)
    await quota.cancel_upload(db, account_id, file_id, int(pending["size"]))

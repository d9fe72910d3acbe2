"""The sequencer's lease: one process sequences at a time, another takes over when it dies.

One document, `audit_sequencer` `lease`, changed only by conditional writes. Each take-over
raises `epoch`; every record the sequencer writes is fenced by it (`sequencer`), so a holder
that was paused past its lease cannot commit over its successor.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.records.audit import AuditSequencerDoc
from vaultd.timefmt import utcnow

LEASE_ID = "lease"


async def take(db: Db, holder: str, seconds: float) -> AuditSequencerDoc | None:
    """The lease, renewed or taken over; None while another live process holds it."""
    now = utcnow()
    until = now + timedelta(seconds=seconds)
    doc = await db.audit_sequencer.find_one({"_id": LEASE_ID})
    if doc is None:
        fresh: AuditSequencerDoc = {"_id": LEASE_ID, "holder": holder, "until": until,
                                    "epoch": 1, "cursors": {}}
        try:
            await db.audit_sequencer.insert_one(fresh)
        except DuplicateKeyError:
            return None  # another process took it first
        return fresh
    if doc["holder"] != holder and doc["until"] > now:
        return None
    epoch = doc["epoch"] if doc["holder"] == holder else doc["epoch"] + 1
    result = await db.audit_sequencer.update_one(
        {"_id": LEASE_ID, "holder": doc["holder"], "epoch": doc["epoch"]},
        {"$set": {"holder": holder, "until": until, "epoch": epoch}})
    if result.modified_count != 1:
        return None
    return {**doc, "holder": holder, "until": until, "epoch": epoch}


async def save_cursors(db: Db, holder: str, epoch: int, cursors: dict[str, datetime]) -> bool:
    result = await db.audit_sequencer.update_one(
        {"_id": LEASE_ID, "holder": holder, "epoch": epoch}, {"$set": {"cursors": cursors}})
    return result.matched_count == 1


async def holds(db: Db, holder: str) -> bool:
    """Whether `holder` holds the lease now (work only the holder does checks it first)."""
    doc = await db.audit_sequencer.find_one({"_id": LEASE_ID}, {"holder": 1, "until": 1})
    return doc is not None and doc["holder"] == holder and doc["until"] > utcnow()


async def release(db: Db, holder: str) -> None:
    """Lets another process take over at once (a graceful stop)."""
    await db.audit_sequencer.update_one({"_id": LEASE_ID, "holder": holder},
                                        {"$set": {"until": utcnow()}})


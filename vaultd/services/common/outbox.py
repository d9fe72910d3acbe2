"""The webhook outbox: one MongoDB document per (event, endpoint), delivered at least once.

An event's message must exist whenever its record does, without multi-document transactions
(a standalone MongoDB has none). So a message is written **before** the record, `held` and
naming the record it waits for (`awaits`: a collection and an equality query); the record is
written; then the message is `release`d (`pending`: deliverable). If the writer fails or dies
in between, `settle_held` (run by every process's delivery loop) settles a held message older
than `webhooks.hold_seconds`: the record exists, the message is released; it does not, the
message is dropped. See docs/webhooks-and-analytics.md. The body and `webhook-id` are fixed
here, so every retry sends the same bytes under the same id.

Delivery (`services.webhooks.webhook_delivery`) claims a due message with a lease: one atomic
update that only matches a message nobody holds, so one process at a time sends it. A message
made deliverable now rings this process's `doorbell`, so its deliverer need not wait a poll.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from pymongo import ReturnDocument
from pymongo.errors import BulkWriteError

from vaultd.db import Db
from vaultd.records import AwaitedRecordDoc, OutboxDoc, OutboxState
from vaultd.services.common import doorbell
from vaultd.services.common.batches import delete_older
from vaultd.timefmt import iso_utc, utcnow

NEVER_LEASED = datetime(1970, 1, 1, tzinfo=UTC)
FINISHED = ("delivered", "failed", "cancelled")
DUPLICATE_KEY = 11000


@dataclass(frozen=True)
class Message:
    """A claimed outbox message: what one delivery attempt needs."""

    id: str
    account_id: str
    endpoint_id: str
    type: str
    body: str
    attempts: int  # attempts made before this one


@dataclass(frozen=True)
class Awaited:
    """The record a held message waits for: a document of `collection` matching `query`."""

    collection: str
    query: dict[str, str | bool]

    def to_doc(self) -> AwaitedRecordDoc:
        return {"collection": self.collection, "query": dict(self.query)}


def event_body(event_type: str, data: Mapping[str, object], at: datetime) -> str:
    """The Standard Webhooks payload shape: {type, timestamp, data}."""
    return json.dumps({"type": event_type, "timestamp": iso_utc(at), "data": data},
                      ensure_ascii=False, separators=(",", ":"))


def _message_id(key: str | None, endpoint_id: str) -> str:
    if key is None:
        return "msg_" + uuid.uuid4().hex
    # One id per (event occurrence, endpoint): queuing the same occurrence twice is a no-op.
    return "msg_" + hashlib.sha256(f"{key}|{endpoint_id}".encode()).hexdigest()[:32]


async def emit(db: Db, account_id: str, event_type: str, data: Mapping[str, object], *,
               awaits: Awaited | None = None, key: str | None = None) -> list[str]:
    """Queue the event for every endpoint of the account that subscribed to it: deliverable
    now, or `held` until `release` when the record it announces is not written yet. `key`
    names the occurrence (same key, same message ids). Returns the message ids."""
    endpoints = db.webhook_endpoints.find({"accountId": account_id, "events": event_type},
                                          {"_id": 1})
    now = utcnow()
    body = event_body(event_type, data, now)
    messages: list[OutboxDoc] = []
    async for endpoint in endpoints:
        message: OutboxDoc = {
            "_id": _message_id(key, endpoint["_id"]), "accountId": account_id,
            "endpointId": endpoint["_id"], "type": event_type, "body": body, "createdAt": now,
            "state": "pending" if awaits is None else "held", "attempts": 0,
            "nextAttemptAt": now, "leaseUntil": NEVER_LEASED}
        if awaits is not None:
            message["awaits"] = awaits.to_doc()
        messages.append(message)
    if messages:
        try:
            await db.webhook_outbox.insert_many(messages, ordered=False)
        except BulkWriteError as error:  # only already-queued occurrences may collide
            if any(item.get("code") != DUPLICATE_KEY for item in error.details["writeErrors"]):
                raise
        if awaits is None:
            doorbell.ring(db)
    return [message["_id"] for message in messages]


async def release(db: Db, message_ids: list[str], body: str | None = None) -> None:
    """The record is written: the held messages become deliverable, now; with `body`, as
    corrected by the writer (what it wrote turned out to differ from what it announced)."""
    if message_ids:
        changes: dict[str, object] = {"state": "pending", "nextAttemptAt": utcnow()}
        if body is not None:
            changes["body"] = body
        await db.webhook_outbox.update_many(
            {"_id": {"$in": message_ids}, "state": "held"},
            {"$set": changes, "$unset": {"awaits": ""}})
        doorbell.ring(db)


async def discard(db: Db, message_ids: list[str]) -> None:
    """The record will not be written (the write failed, or another caller made it)."""
    if message_ids:
        await db.webhook_outbox.delete_many({"_id": {"$in": message_ids}, "state": "held"})


async def settle_held(db: Db, older_than_seconds: float) -> tuple[int, int]:
    """Settle held messages their writer left behind: released when the awaited record
    exists, dropped when not. Returns (released, dropped)."""
    cutoff = utcnow() - timedelta(seconds=older_than_seconds)
    released, dropped = 0, 0
    async for message in db.webhook_outbox.find({"state": "held", "createdAt": {"$lt": cutoff}}):
        awaits = message.get("awaits")
        found = None
        if awaits is not None:
            found = await db.raw(awaits["collection"]).find_one(awaits["query"], {"_id": 1})
        if found is not None:
            await release(db, [message["_id"]])
            released += 1
        else:
            await discard(db, [message["_id"]])
            dropped += 1
    return released, dropped


async def prune(db: Db, keep_seconds: float) -> int:
    """Retention: finished messages and delivery records older than the bound go."""
    cutoff = utcnow() - timedelta(seconds=keep_seconds)
    pruned = 0
    for state in FINISHED:  # one index range each: `$in` beside a range would scan them all
        pruned += await delete_older(db.raw(db.webhook_outbox.name), {"state": state},
                                     "finishedAt", cutoff)
    return pruned + await delete_older(db.raw(db.webhook_deliveries.name), {}, "at", cutoff)


async def claim_due(db: Db, owner: str, lease_seconds: float) -> Message | None:
    """Take one due message nobody holds (or whose holder's lease ran out)."""
    now = utcnow()
    doc = await db.webhook_outbox.find_one_and_update(
        {"state": "pending", "nextAttemptAt": {"$lte": now}, "leaseUntil": {"$lte": now}},
        {"$set": {"leaseUntil": now + timedelta(seconds=lease_seconds), "leaseOwner": owner}},
        sort=[("nextAttemptAt", 1)], return_document=ReturnDocument.AFTER)
    if doc is None:
        return None
    return Message(doc["_id"], doc["accountId"], doc["endpointId"], doc["type"], doc["body"],
                   int(doc["attempts"]))


class _Settled(TypedDict, total=False):
    """The fields of an `OutboxDoc` an attempt's outcome sets."""

    attempts: int
    leaseUntil: datetime
    lastError: str | None
    state: OutboxState
    finishedAt: datetime
    nextAttemptAt: datetime


async def settle(db: Db, message: Message, owner: str, *, delivered: bool,
                 retry_in: float | None, reason: str | None) -> None:
    """After an attempt: delivered, retried after `retry_in` seconds, or given up (None)."""
    now = utcnow()
    fields: _Settled = {"attempts": message.attempts + 1, "leaseUntil": NEVER_LEASED,
                        "lastError": reason}
    if delivered:
        fields["state"], fields["finishedAt"] = "delivered", now
    elif retry_in is None:
        fields["state"], fields["finishedAt"] = "failed", now
    else:
        fields["nextAttemptAt"] = now + timedelta(seconds=retry_in)
    # Only the lease holder settles: a process that overran its lease does not undo another's.
    await db.webhook_outbox.update_one({"_id": message.id, "leaseOwner": owner},
                                       {"$set": fields})


async def cancel(db: Db, message: Message, reason: str) -> None:
    await db.webhook_outbox.update_one(
        {"_id": message.id},
        {"$set": {"state": "cancelled", "lastError": reason, "finishedAt": utcnow()}})

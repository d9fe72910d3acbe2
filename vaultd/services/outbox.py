"""The webhook outbox: one MongoDB document per (event, endpoint), delivered at least once.

`emit` is called right after the event's own record is written (file, link, access-log entry),
before the request is answered. vaultd does not depend on multi-document transactions (a
standalone MongoDB has none), so the two writes are separate: see docs/webhooks-and-analytics.md
for what a crash between them means. The message body and its `webhook-id` are fixed here, so
every retry sends the same bytes under the same id.

Delivery (`services.webhook_delivery`) claims a due message with a lease: one atomic update that
only matches a message nobody holds, so one process at a time sends it; a process that dies
mid-delivery loses its lease when it expires and another takes over.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ReturnDocument

from vaultd.db import Db
from vaultd.timefmt import iso_utc, utcnow

NEVER_LEASED = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Message:
    """A claimed outbox message: what one delivery attempt needs."""

    id: str
    account_id: str
    endpoint_id: str
    type: str
    body: str
    attempts: int  # attempts made before this one


def event_body(event_type: str, data: dict[str, Any], at: datetime) -> str:
    """The Standard Webhooks payload shape: {type, timestamp, data}."""
    return json.dumps({"type": event_type, "timestamp": iso_utc(at), "data": data},
                      ensure_ascii=False, separators=(",", ":"))


async def emit(db: Db, account_id: str, event_type: str, data: dict[str, Any]) -> int:
    """Queue the event for every endpoint of the account that subscribed to it."""
    endpoints = db.webhook_endpoints.find({"accountId": account_id, "events": event_type},
                                          {"_id": 1})
    now = utcnow()
    body = event_body(event_type, data, now)
    messages = [{
        "_id": "msg_" + uuid.uuid4().hex, "accountId": account_id, "endpointId": endpoint["_id"],
        "type": event_type, "body": body, "createdAt": now, "state": "pending", "attempts": 0,
        "nextAttemptAt": now, "leaseUntil": NEVER_LEASED,
    } async for endpoint in endpoints]
    if messages:
        await db.webhook_outbox.insert_many(messages)
    return len(messages)


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


async def settle(db: Db, message: Message, owner: str, *, delivered: bool,
                 retry_in: float | None, reason: str | None) -> None:
    """After an attempt: delivered, retried after `retry_in` seconds, or given up (None)."""
    fields: dict[str, Any] = {"attempts": message.attempts + 1, "leaseUntil": NEVER_LEASED,
                              "lastError": reason}
    if delivered:
        fields["state"] = "delivered"
    elif retry_in is None:
        fields["state"] = "failed"
    else:
        fields["nextAttemptAt"] = utcnow() + timedelta(seconds=retry_in)
    # Only the lease holder settles: a process that overran its lease does not undo another's.
    await db.webhook_outbox.update_one({"_id": message.id, "leaseOwner": owner},
                                       {"$set": fields})


async def cancel(db: Db, message: Message, reason: str) -> None:
    await db.webhook_outbox.update_one({"_id": message.id},
                                       {"$set": {"state": "cancelled", "lastError": reason}})

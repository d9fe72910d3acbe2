"""The fence that keeps a log entry from landing behind the audit sequencer's last look.

An access-log entry or activity event is stamped (`at`) by its process's clock before its
insert; the audit sequencer (services.audit.sequencer) reads each time stretch a last time once
`audit.late_arrival_seconds` have passed. A writer paused longer than that between stamping
and inserting would land in a stretch already read, and never be sequenced. So before that
last look the sequencer sets a validator on the collection: an entry written through `insert`
(marked `fenced`) is refused unless stamped at or after the *horizon*, the end of the stretch.
Refused, the writer stamps it again, at the horizon or later, and inserts it: it lands ahead
of every look, and is sequenced as any new entry. An entry is never lost, and the insert stays
one command unless the writer was that late.

Records inserted without the mark (a test's or a tool's records written with old times on
purpose) are not refused: they are sequenced if they land before their last look, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.errors import OperationFailure, WriteError

from vaultd.db import Db
from vaultd.errors import ServiceUnavailable
from vaultd.timefmt import utcnow

FENCED = "fenced"  # the mark on an entry its writer stamped now (a `true` field)
DOCUMENT_VALIDATION_FAILURE = 121
NAMESPACE_NOT_FOUND = 26
ATTEMPTS = 5  # each refusal reads the horizon again: it moves once a merge delay at most
AFTER = timedelta(milliseconds=1)  # the horizon itself was read: a stamp just past it lands


def validator(horizon: datetime) -> dict[str, Any]:
    """What a collection accepts once its stretch before `horizon` has had its last look."""
    return {"$or": [{FENCED: {"$exists": False}}, {"at": {"$gte": horizon}}]}


async def insert(db: Db, collection: str, entry: Mapping[str, Any]) -> None:
    """Inserts `entry`, marked, in one command; stamped again past the horizon if it came too
    late for it (and its time then says when it landed, not when it was first stamped)."""
    doc = {**entry, FENCED: True}
    for _ in range(ATTEMPTS):
        try:
            await db.raw(collection).insert_one(doc)
            return
        except WriteError as error:
            if error.code != DOCUMENT_VALIDATION_FAILURE:
                raise
        horizon = (await horizons(db, [collection])).get(collection)
        doc["at"] = max(utcnow(), horizon + AFTER) if horizon is not None else utcnow()
    # Refused again and again: this process's clock is far behind the sequencer's. Nothing is
    # written; the action that needed the entry does not happen.
    raise ServiceUnavailable("the log cannot be written now; try again later")


async def horizons(db: Db, collections: list[str]) -> dict[str, datetime]:
    """The horizon each of `collections` holds now (none: not fenced yet), in one command."""
    found: dict[str, datetime] = {}
    listed = await db.database.list_collections(filter={"name": {"$in": collections}})
    async for spec in listed:
        rules = spec.get("options", {}).get("validator", {}).get("$or", [])
        for rule in rules:
            bound = rule.get("at", {}).get("$gte") if isinstance(rule, dict) else None
            if isinstance(bound, datetime):
                found[spec["name"]] = bound if bound.tzinfo else bound.replace(tzinfo=UTC)
    return found


async def raise_horizon(db: Db, collection: str, horizon: datetime) -> None:
    """Refuses, from now on, fenced entries of `collection` stamped before `horizon`."""
    try:
        await db.database.command("collMod", collection, validator=validator(horizon))
    except OperationFailure as error:
        if error.code != NAMESPACE_NOT_FOUND:
            raise
        await db.database.create_collection(collection, validator=validator(horizon))

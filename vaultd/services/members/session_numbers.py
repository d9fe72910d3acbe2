"""A number per session in its person's sessions, so that a person's sessions are listed newest
first by number ranges (`services.common.numbered`): the listing reads about what it shows,
however many sessions a burst of sign-ins left (the embedded database reads every session of an
address for a sorted, limited `find`: it does not push `limit` down).

A person has no record of their own (they have one per account), so the counter is one of
`common.counters` per address, raised by the sign-in that opens the session, before the
session's insert: a failed insert leaves a gap, which the ranges step over. Sessions opened
before numbers existed are numbered once at start-up, 0 and down, the address's lowest kept as
the counter's `floor`.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from pymongo import UpdateOne

from vaultd.db import Db
from vaultd.services.common import counters

SESSION_NUMBER_MIGRATION = "sessionSeq"
NUMBERING_BATCH = 20  # updates per command


def scope(email: str) -> str:
    """The address's counter (`common.counters`)."""
    return f"sessions:{email}"


async def next_number(db: Db, email: str) -> int:
    """The number of the address's next session."""
    return await counters.next_number(db, scope(email))


async def bounds(db: Db, email: str) -> tuple[int, int]:
    """(top, floor): the address's last number given and the lowest any session has."""
    return await counters.bounds(db, scope(email))


async def number_sessions_once(db: Db) -> None:
    """Sessions opened before numbers existed get numbers below their address's first new one
    (newest 0, then -1, -2... by opening time), and the counter the lowest as `floor`. Only live
    sessions are kept (the TTL index drops the others), so they are read at once; a marker in
    `migrations` keeps later start-ups from looking again."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": SESSION_NUMBER_MIGRATION}) is not None:
        return
    unnumbered: dict[str, list[dict[str, Any]]] = defaultdict(list)
    async for doc in db.raw(db.member_sessions.name).find({"seq": {"$exists": False}},
                                                           {"email": 1, "createdAt": 1}):
        unnumbered[doc["email"]].append(doc)
    for email, docs in unnumbered.items():
        docs.sort(key=lambda doc: (doc["createdAt"], doc["_id"]), reverse=True)
        updates = [UpdateOne({"_id": doc["_id"]}, {"$set": {"seq": -place}})
                   for place, doc in enumerate(docs)]
        for first in range(0, len(updates), NUMBERING_BATCH):
            await db.raw(db.member_sessions.name).bulk_write(
                updates[first:first + NUMBERING_BATCH], ordered=False)
        await counters.lower_floor(db, scope(email), 1 - len(docs))
    await marks.update_one({"_id": SESSION_NUMBER_MIGRATION},
                           {"$set": {"at": datetime.now(UTC)}}, upsert=True)

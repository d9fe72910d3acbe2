"""Rolling-window limits kept in the database, so a limit holds across every vaultd sharing it:
sends of sign-in and email codes, wrong passcodes, sessions opened from one address.

A limited key's record keeps the times of its last `limit` events (`$push` with `$slice`). One
more is allowed while fewer than `limit` are kept or the oldest kept is out of the window: at
most `limit` events in any `window_seconds`, whenever they fall. A fixed window reset on the
clock's hour would allow twice the limit in a few seconds either side of the hour. The check
and the count are one conditional update, so concurrent events cannot pass the limit together
(two processes cannot both take the last place); the record expires (TTL on `expiresAt`) once
its last event is out of the window."""

from __future__ import annotations

from datetime import datetime, timedelta

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.timefmt import utcnow

COLLECTION = "rate_limits"


async def take(db: Db, key: str, limit: int, window_seconds: int,
               now: datetime | None = None, collection: str = COLLECTION) -> bool:
    """Counts one more event of `key`; False (and not counted) once `limit` events fall within
    the last `window_seconds`. `now`: the event's time (the current time unless given)."""
    now = now or utcnow()
    since = now - timedelta(seconds=window_seconds)
    room = {"$or": [{f"hits.{limit - 1}": {"$exists": False}}, {"hits.0": {"$lte": since}}]}
    update = {"$push": {"hits": {"$each": [now], "$slice": -limit}},
              "$set": {"expiresAt": now + timedelta(seconds=window_seconds)}}
    for _ in range(2):
        try:
            # A full record does not match, and the upsert's insert then collides on `_id`.
            await db.raw(collection).update_one({"_id": key, **room}, update, upsert=True)
            return True
        except DuplicateKeyError:
            # The record exists and has no room (or two first events raced: one more look).
            continue
    return False

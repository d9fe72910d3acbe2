"""Rolling-window limits kept in the database, so a limit holds across every vaultd sharing it.

One record a limited key (collection `rate_limits`): the times of its events in the last
window. An event is counted only while fewer than `limit` are in the window: the check and the
count are one conditional update, so two processes cannot both take the last place. Unlike a
fixed window (`gates.counters`), a burst at a window's edge cannot double the limit."""

from __future__ import annotations

from datetime import timedelta

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.timefmt import utcnow

COLLECTION = "rate_limits"


async def take(db: Db, key: str, limit: int, window_seconds: int) -> bool:
    """Counts one event of `key`; False (and nothing counted) when `limit` events already
    happened within the last `window_seconds`."""
    now = utcnow()
    window = timedelta(seconds=window_seconds)
    limits = db.raw(COLLECTION)
    await limits.update_one({"_id": key}, {"$pull": {"at": {"$lte": now - window}}})
    update = {"$push": {"at": now}, "$set": {"expiresAt": now + window}}
    for _ in range(2):  # a first event racing another: one inserts, the other counts again
        try:
            # A full record does not match, and the upsert's insert then collides on `_id`.
            await limits.update_one({"_id": key, f"at.{limit - 1}": {"$exists": False}},
                                    update, upsert=True)
            return True
        except DuplicateKeyError:
            continue
    return False

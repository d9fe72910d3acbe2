"""Fixed-window counters kept in the database, so a limit holds across every vaultd process:
sends of email codes per link and per IP, wrong passcodes per link."""

from __future__ import annotations

from datetime import timedelta

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from vaultd.db import GATE_COUNTERS, Db
from vaultd.timefmt import utcnow

COLLECTION = GATE_COUNTERS


async def take(db: Db, key: str, limit: int, window_seconds: int) -> bool:
    """Counts one more event of `key` in the current window; False once `limit` is exceeded."""
    now = utcnow()
    window = int(now.timestamp()) // window_seconds
    counters = db.raw(COLLECTION)
    update = {"$inc": {"n": 1},
              "$setOnInsert": {"expiresAt": now + timedelta(seconds=window_seconds)}}
    for _ in range(2):  # two first events at once: one inserts, the other increments
        try:
            doc = await counters.find_one_and_update(
                {"_id": f"{key}:{window}"}, update, upsert=True,
                return_document=ReturnDocument.AFTER)
            return int(doc["n"]) <= limit if doc else True
        except DuplicateKeyError:
            continue
    return False


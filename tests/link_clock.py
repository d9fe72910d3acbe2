"""Standing in for time: links' expiry set back in the database, then their files' count
bounds lowered as an expiry changed through the API lowers them (`link_counts.expiry_moved`).
Without the second step a file's count, bounded by a sweep before, would not see the change
until its bound passes (docs/operations.md: an operator's edit of `expiresAt`)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from vaultd.db import Db
from vaultd.services.accounts import link_counts
from vaultd.timefmt import utcnow


async def set_expiry(db: Db, query: dict[str, Any], at: datetime) -> None:
    """The links matching `query` now expire at `at`."""
    await db.links.update_many(query, {"$set": {"expiresAt": at}})
    files = {link["fileId"] async for link in db.links.find(query, {"fileId": 1})}
    for file_id in sorted(files):
        await link_counts.expiry_moved(db, file_id, at)


async def expire_at_once(db: Db, query: dict[str, Any]) -> None:
    """The links matching `query` expire at one instant, after the sweeps before and before
    the reads after."""
    at = utcnow() + timedelta(seconds=0.5)
    await set_expiry(db, query, at)
    await asyncio.sleep((at - utcnow()).total_seconds() + 0.05)

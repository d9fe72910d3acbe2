"""Standing in for time: links' (or room links') expiry set back in the database, then their
files' and accounts' count bounds lowered as an expiry changed through the API lowers them
(`link_counts.expiry_moved`). Without the second step a count, bounded by a sweep before, would
not see the change until its bound passes (docs/operations.md: an operator's edit of
`expiresAt`)."""

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
    files = {(link["accountId"], link["fileId"])
             async for link in db.links.find(query, {"accountId": 1, "fileId": 1})}
    for account_id, file_id in sorted(files):
        await link_counts.expiry_moved(db, account_id, file_id, at)


async def expire_at_once(db: Db, query: dict[str, Any]) -> None:
    """The links matching `query` expire at one instant, after the sweeps before and before
    the reads after."""
    at = utcnow() + timedelta(seconds=0.5)
    await set_expiry(db, query, at)
    await asyncio.sleep((at - utcnow()).total_seconds() + 0.05)


async def set_room_expiry(db: Db, query: dict[str, Any], at: datetime) -> None:
    """The room links matching `query` now expire at `at` (a room's count keeps no bound)."""
    await db.room_links.update_many(query, {"$set": {"expiresAt": at}})
    accounts = {link["accountId"] async for link in db.room_links.find(query, {"accountId": 1})}
    for account_id in sorted(accounts):
        await link_counts.account_expiry_moved(db, account_id, at)

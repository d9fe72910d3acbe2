"""The age of the oldest webhook message still to deliver, read at each scrape."""

from __future__ import annotations

import logging

from pymongo.errors import PyMongoError

from vaultd.db import Db
from vaultd.metrics.registry import Metrics
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.metrics")


async def refresh_oldest_pending(metrics: Metrics, db: Db) -> None:
    """One indexed query (state, createdAt); with the database down the last figure stays."""
    try:
        oldest = await db.webhook_outbox.find_one(
            {"state": "pending"}, sort=[("createdAt", 1)], projection={"createdAt": 1})
    except PyMongoError:
        log.warning("metrics: webhook backlog not read: database unavailable")
        return
    age = 0.0 if oldest is None else (utcnow() - oldest["createdAt"]).total_seconds()
    metrics.webhook_oldest_pending.set(max(0.0, age))

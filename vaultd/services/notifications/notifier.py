"""The notification sender: runs in every vaultd process where SMTP is set (`smtp.*`).

Each round queues the first-open mails (`open_mails`, coalesced) and the digests that are
due, finishes the first opens a stopped process left owed (`opens.sweep_owed`), then sends the
mails that are due, each under a lease so that of several processes one sends it (`mails`). It
polls as often as webhook delivery does (`webhooks.poll_seconds`): both are the account's
events leaving the vault."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from pymongo import ASCENDING

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.common.periodic import Periodic
from vaultd.services.notifications import digest, mails, open_mails, opens

log = logging.getLogger("vaultd.notifications")

BATCH = 20  # mails sent per round at most: a slow SMTP server delays the next round only
SWEEP_EVERY_SECONDS = 15.0


async def ensure_indexes(db: Db) -> None:
    """The sender's reads, each one index range: due mails, due digests, owed first opens, a
    member's opens of a day, and retention's windows."""
    await db.notification_mails.create_index(
        [("state", ASCENDING), ("nextAttemptAt", ASCENDING), ("leaseUntil", ASCENDING)])
    await db.notification_mails.create_index([("state", ASCENDING), ("sentAt", ASCENDING)])
    await db.notification_prefs.create_index(
        [("dailyDigest", ASCENDING), ("digestDueAt", ASCENDING)])
    await db.notification_opens.create_index([("memberId", ASCENDING), ("at", ASCENDING)])
    await db.notification_opens.create_index([("at", ASCENDING)],
                                             expireAfterSeconds=int(opens.KEEP.total_seconds()))
    await db.link_stats.create_index([("alertOwed", ASCENDING)], sparse=True)
    await db.room_links.create_index([("alertOwed", ASCENDING)], sparse=True)
    await db.notification_opens.create_index([("mailOwed", ASCENDING)], sparse=True)


class Notifier:
    def __init__(self, db: Db, settings: Settings) -> None:
        self.db, self.settings = db, settings
        self.owner = uuid.uuid4().hex
        self._next_sweep = 0.0
        self._loop = Periodic(self.round, settings.webhooks_poll_seconds)

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        """A mail being sent keeps its lease: another process (or this one, restarted) sends it
        once the lease runs out."""
        await self._loop.stop()

    async def round(self) -> int:
        """One round; returns how many mails were sent."""
        try:
            now = time.monotonic()
            if now >= self._next_sweep:
                self._next_sweep = now + SWEEP_EVERY_SECONDS
                await opens.sweep_owed(self.db)
                await mails.prune(self.db)
            await open_mails.queue_due(self.db,
                                       self.settings.notifications_open_mail_window_seconds)
            await digest.queue_due(self.db)
            return await self._send_due()
        except asyncio.CancelledError:
            raise
        except Exception:  # the database may be down; the next round retries
            log.warning("notifications skipped: database unavailable")
            return 0

    async def _send_due(self) -> int:
        sent = 0
        for _ in range(BATCH):
            mail = await mails.claim(self.db, self.owner, self.settings.webhooks_lease_seconds)
            if mail is None:
                break
            sent += await mails.send(self.db, self.settings, mail, self.owner)
        return sent

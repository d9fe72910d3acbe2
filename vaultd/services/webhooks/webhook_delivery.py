"""The delivery loop every vaultd process runs: claim a due outbox message, sign, send, settle.

Signing is the `standardwebhooks` library's: `webhook-id` is the message id (the same on every
retry), `webhook-timestamp` the attempt's time (verifiers reject stale ones), and
`webhook-signature` an HMAC-SHA256 over `id.timestamp.body`. Retries follow
`webhooks.retry_schedule` (Standard Webhooks' guidance by default) with a little jitter.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from standardwebhooks import Webhook

from vaultd.crypto.keyring import KeyUnavailable, MasterKeyring
from vaultd.db import Db
from vaultd.records import WebhookEndpointDoc
from vaultd.services.common import doorbell, outbox
from vaultd.services.common.outbox import Message
from vaultd.services.common.periodic import Periodic
from vaultd.services.webhooks import delivery_numbers, webhook_events
from vaultd.services.webhooks.webhook_failures import SECRET_UNAVAILABLE
from vaultd.services.webhooks.webhook_http import AttemptResult, post_signed
from vaultd.services.webhooks.webhooks import endpoint_secret
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.webhooks")

JITTER = 0.1  # each retry delay is stretched by up to 10 %, so failed bursts spread out
BATCH = 40  # messages taken per tick at most, so one tick never runs for long
CONCURRENT = 8  # attempts in flight at once (each is bounded by the 5 s timeout)


@dataclass(frozen=True)
class DeliveryConfig:
    retry_schedule: tuple[float, ...]
    allow_private: bool
    lease_seconds: float
    poll_seconds: float
    hold_seconds: float = 60.0  # a held message older than this is settled by its record
    keep_seconds: float = 30 * 86400.0  # finished messages and attempt records are kept so long


def signed_headers(secret: str, message: Message, now: datetime) -> dict[str, str]:
    signature = Webhook(secret).sign(message.id, now, message.body)
    return {"content-type": "application/json", "webhook-id": message.id,
            "webhook-timestamp": str(int(now.timestamp())), "webhook-signature": signature}


def retry_delay(schedule: tuple[float, ...], attempts_made: int) -> float | None:
    """Seconds before the next attempt, after `attempts_made` attempts (the first one was
    immediate, `schedule` holds the retries); None: give up."""
    if not 1 <= attempts_made <= len(schedule):
        return None
    return schedule[attempts_made - 1] * (1 + random.uniform(0, JITTER))


class Deliverer:
    """Runs in every vaultd process; the leases keep them from sending a message twice at once."""

    def __init__(self, db: Db, keyring: Callable[[], MasterKeyring],
                 config: DeliveryConfig,
                 on_attempt: Callable[[bool], None] = lambda ok: None) -> None:
        self.db, self.keyring, self.config = db, keyring, config
        self.on_attempt = on_attempt  # told whether each attempt succeeded (metrics)
        self.owner = uuid.uuid4().hex
        self._next_sweep = 0.0
        self._loop = Periodic(self._round, config.poll_seconds, round_at_stop=True)
        self._stop_listening: Callable[[], None] = lambda: None

    def start(self) -> None:
        self._loop.start()
        self._stop_listening = doorbell.listen(self.db, self._loop.wake)

    async def stop(self, flush_seconds: float = 0.0) -> None:
        """Deliver what is due now (what the last requests queued), for up to `flush_seconds`,
        then stop. An attempt cut short keeps its lease: it is sent again once that runs out."""
        self._stop_listening()
        if not await self._loop.stop(flush_seconds) and flush_seconds > 0:
            log.warning("webhook deliveries still under way at the stop: sent after restart")

    async def _round(self) -> None:
        try:
            await self.sweep()
            await self.tick()
        except asyncio.CancelledError:
            raise
        except Exception:  # the database may be down; the next round retries
            log.warning("webhook delivery skipped: database unavailable")

    async def sweep(self) -> None:
        """Settle what crashed writers left (held messages, unannounced opens and completions)
        and prune what retention no longer keeps. Every process runs it; each step is
        idempotent. At most once per `hold_seconds / 4`, as the bounds are coarse."""
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.config.hold_seconds / 4
        await outbox.settle_held(self.db, self.config.hold_seconds)
        await webhook_events.announce_missed(self.db, self.config.hold_seconds)
        await outbox.prune(self.db, self.config.keep_seconds)

    async def tick(self) -> int:
        """Deliver what is due now, a few messages at a time so one slow endpoint does not hold
        up the others; returns how many attempts were made."""
        made = 0
        while made < BATCH:
            claimed = []
            for _ in range(CONCURRENT):
                message = await outbox.claim_due(self.db, self.owner, self.config.lease_seconds)
                if message is None:
                    break
                claimed.append(message)
            if not claimed:
                break
            await asyncio.gather(*(self.attempt(message) for message in claimed))
            made += len(claimed)
        return made

    async def attempt(self, message: Message) -> None:
        endpoint = await self.db.webhook_endpoints.find_one({"_id": message.endpoint_id})
        if endpoint is None:
            await outbox.cancel(self.db, message, "endpoint deleted")
            return
        result = await self._send(endpoint, message)
        self.on_attempt(result.ok)
        await self._record(message, result)
        retry_in = None if result.ok else retry_delay(self.config.retry_schedule,
                                                      message.attempts + 1)
        await outbox.settle(self.db, message, self.owner, delivered=result.ok,
                            retry_in=retry_in, reason=result.error)

    async def _send(self, endpoint: WebhookEndpointDoc, message: Message) -> AttemptResult:
        try:
            secret = endpoint_secret(self.keyring(), endpoint)
        except KeyUnavailable:
            log.error("webhook secret of endpoint %s cannot be unwrapped", endpoint["_id"])
            return AttemptResult(None, False, 0, SECRET_UNAVAILABLE, SECRET_UNAVAILABLE)
        headers = signed_headers(secret, message, utcnow())
        return await post_signed(endpoint["url"], message.body, headers,
                                 self.config.allow_private)

    async def _record(self, message: Message, result: AttemptResult) -> None:
        """Store the attempt with the tenant's category; the detail goes to the log only."""
        delivery_id = uuid.uuid4().hex
        if not result.ok:
            log.warning("webhook delivery %s failed (message %s, endpoint %s, attempt %d): %s",
                        delivery_id, message.id, message.endpoint_id, message.attempts + 1,
                        result.detail)
        number = await delivery_numbers.next_number(self.db, message.endpoint_id)
        # Raw: the record's number (`seq`, its place in the endpoint, delivery_numbers) is
        # storage for the reading order, not a field `DeliveryDoc` shows.
        await self.db.raw(self.db.webhook_deliveries.name).insert_one({
            "_id": delivery_id, "messageId": message.id, "endpointId": message.endpoint_id,
            "accountId": message.account_id, "type": message.type,
            "attempt": message.attempts + 1, "at": utcnow(), "status": result.status,
            "ok": result.ok, "durationMs": result.duration_ms, "error": result.error,
            "seq": number})

"""Rolling-window counters kept in the database, so a limit holds across every vaultd process:
sends of email codes, wrong passcodes, sessions opened from one address.

A key's record keeps the times of its last `limit` events (`$push` with `$slice`). One more is
allowed while fewer than `limit` are kept or the oldest kept is out of the window: at most
`limit` events in any `window_seconds`, whenever they fall. A fixed window reset on the clock's
hour would allow twice the limit in a few seconds either side of the hour. The check and the
count are one conditional update, so concurrent events cannot pass the limit together; the
record expires (TTL) once its last event is out of the window."""

from __future__ import annotations

import ipaddress
from datetime import datetime, timedelta

from pymongo.errors import DuplicateKeyError

from vaultd.db import GATE_COUNTERS, Db
from vaultd.timefmt import utcnow

COLLECTION = GATE_COUNTERS
UNKNOWN_ADDRESS = "-"
IPV6_PREFIX = 64  # one IPv6 subscriber is usually given a whole /64


async def take(db: Db, key: str, limit: int, window_seconds: int,
               now: datetime | None = None) -> bool:
    """Counts one more event of `key`; False (and not counted) once `limit` events fall within
    the last `window_seconds`. `now`: the event's time (the current time unless given)."""
    now = now or utcnow()
    since = now - timedelta(seconds=window_seconds)
    room = {"$or": [{f"hits.{limit - 1}": {"$exists": False}}, {"hits.0": {"$lte": since}}]}
    update = {"$push": {"hits": {"$each": [now], "$slice": -limit}},
              "$set": {"expiresAt": now + timedelta(seconds=window_seconds)}}
    for _ in range(2):
        try:
            await db.raw(COLLECTION).update_one({"_id": key, **room}, update, upsert=True)
            return True
        except DuplicateKeyError:
            # The record exists and has no room (or two first events raced: one more look).
            continue
    return False


def address_key(ip: str | None) -> str:
    """What a per-address limit counts under: the address, or its /64 for IPv6 (a client
    changes addresses inside its /64 at will)."""
    if ip is None:
        return UNKNOWN_ADDRESS
    address = ipaddress.ip_address(ip)
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)

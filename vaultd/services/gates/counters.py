"""The gates' rolling-window counters (`common.rolling_limits`, in a collection of their own):
sends of email codes, wrong passcodes, sessions opened from one address; and what a
per-address limit counts under."""

from __future__ import annotations

import ipaddress
from datetime import datetime

from vaultd.db import GATE_COUNTERS, Db
from vaultd.services.common import rolling_limits

COLLECTION = GATE_COUNTERS
UNKNOWN_ADDRESS = "-"
IPV6_PREFIX = 64  # one IPv6 subscriber is usually given a whole /64


async def take(db: Db, key: str, limit: int, window_seconds: int,
               now: datetime | None = None) -> bool:
    """`rolling_limits.take` on the gates' collection."""
    return await rolling_limits.take(db, key, limit, window_seconds, now, COLLECTION)


def address_key(ip: str | None) -> str:
    """What a per-address limit counts under: the address, or its /64 for IPv6 (a client
    changes addresses inside its /64 at will)."""
    if ip is None:
        return UNKNOWN_ADDRESS
    address = ipaddress.ip_address(ip)
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)

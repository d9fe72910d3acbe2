"""A link's policy: parsed from `POST /v1/views`'s `policy`, stored on the link, shown back.

Every invalid value is a 400 naming the field (`policy.<field> ...`). The session gates'
fields are parsed, stored and shown by their gate (`registry`, `kinds/`): the passcode is kept
only as a slow hash and never shown, an agreement is pinned to its latest version at
creation. The link's conditions (`allowedIps`, `notBefore`, `maxOpens`) are parsed here.
No policy: no `policy` key on the link, and today's behaviour exactly."""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime
from typing import Any, cast

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import InvalidRequest
from vaultd.records import PolicyDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.gates import registry
from vaultd.services.gates.registry import PolicyInput
from vaultd.timefmt import iso_utc

# The link's conditions: checked on every request (`check.Gates`), nothing to pass.
CONDITIONS = registry.CONDITION_KEYS
MAX_NETWORKS = 50
MAX_OPENS = 1_000_000


def known_fields() -> list[str]:
    """The fields `policy` takes: each session gate's (`registry`), then the conditions."""
    return [*registry.policy_fields(), *CONDITIONS]


async def parse_policy(db: Db, settings: Settings, account: Account, value: Any,
                       expires_at: datetime) -> PolicyDoc | None:
    """The policy to store, or None when the request has none (or an empty one)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest("policy must be an object")
    known = known_fields()
    for name in value:
        if name not in known:
            raise InvalidRequest(f"policy.{name} is not a known gate (gates: {', '.join(known)})")
    stored: dict[str, Any] = {}
    given = PolicyInput(db, settings, account, expires_at)
    for gate in registry.gates():
        stored.update(await gate.parse(given, value))
    policy = cast(PolicyDoc, stored)
    if "allowedIps" in value:
        policy["allowedIps"] = _networks(value["allowedIps"])
    if "notBefore" in value:
        policy["notBefore"] = _not_before(value["notBefore"], expires_at)
    if "maxOpens" in value:
        policy["maxOpens"] = _max_opens(value["maxOpens"])
    return policy or None


def _networks(value: Any) -> list[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_NETWORKS:
        raise InvalidRequest(
            f"policy.allowedIps must be a list of 1 to {MAX_NETWORKS} addresses or CIDR ranges")
    networks = []
    for item in value:
        try:
            if not isinstance(item, str):  # ip_network takes integers too
                raise TypeError(item)
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except (TypeError, ValueError):
            raise InvalidRequest(
                "policy.allowedIps must hold IP addresses or CIDR ranges such as 203.0.113.0/24"
            ) from None
    return networks


def _not_before(value: Any, expires_at: datetime) -> datetime:
    message = "policy.notBefore must be an ISO 8601 time with a zone, before the link expires"
    if not isinstance(value, str):
        raise InvalidRequest(message)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(message) from None
    if moment.tzinfo is None or moment >= expires_at:
        raise InvalidRequest(message)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _max_opens(value: Any) -> int:
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or value != int(value) or not 1 <= value <= MAX_OPENS):
        raise InvalidRequest(f"policy.maxOpens must be a whole number from 1 to {MAX_OPENS}")
    return int(value)


def policy_json(policy: PolicyDoc) -> dict[str, Any]:
    """The policy as the owner sees it: the passcode only as `"passcode": true`."""
    shown: dict[str, Any] = {}
    for gate in registry.gates():
        if gate.present(policy):
            shown.update(gate.shown(policy))
    if "allowedIps" in policy:
        shown["allowedIps"] = list(policy["allowedIps"])
    if "notBefore" in policy:
        shown["notBefore"] = iso_utc(policy["notBefore"])
    if "maxOpens" in policy:
        shown["maxOpens"] = policy["maxOpens"]
    return shown

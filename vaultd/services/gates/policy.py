"""A link's policy: parsed from `POST /v1/views`'s `policy`, stored on the link, shown back.

Every invalid value is a 400 naming the field (`policy.<field> ...`). The passcode is kept
only as a slow hash (`passcodes`) and never shown; an agreement is pinned to its latest
version at creation. No policy: no `policy` key on the link, and today's behaviour exactly."""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime
from typing import Any

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import PolicyDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.gates import agreements
from vaultd.services.gates.passcodes import hash_passcode
from vaultd.timefmt import iso_utc

KNOWN = ("verifyEmail", "passcode", "agreementId", "allowedIps", "notBefore", "maxOpens")
# The gates passed inside a viewer session, in the order a reader meets them.
SESSION_GATES = ("verifyEmail", "passcode", "agreement")
PASSCODE_LENGTH = (4, 128)
MAX_NETWORKS = 50
MAX_OPENS = 1_000_000


async def parse_policy(db: Db, settings: Settings, account: Account, value: Any,
                       expires_at: datetime) -> PolicyDoc | None:
    """The policy to store, or None when the request has none (or an empty one)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest("policy must be an object")
    for name in value:
        if name not in KNOWN:
            raise InvalidRequest(f"policy.{name} is not a known gate (gates: {', '.join(KNOWN)})")
    policy: PolicyDoc = {}
    if _verify_email(value.get("verifyEmail"), settings):
        policy["verifyEmail"] = True
    if "passcode" in value:
        policy["passcodeHash"] = await hash_passcode(_passcode(value["passcode"]))
    if "agreementId" in value:
        policy["agreement"] = await _agreement(db, account, value["agreementId"])
    if "allowedIps" in value:
        policy["allowedIps"] = _networks(value["allowedIps"])
    if "notBefore" in value:
        policy["notBefore"] = _not_before(value["notBefore"], expires_at)
    if "maxOpens" in value:
        policy["maxOpens"] = _max_opens(value["maxOpens"])
    return policy or None


def _verify_email(value: Any, settings: Settings) -> bool:
    if value is None or value is False:
        return False
    if value is not True:
        raise InvalidRequest("policy.verifyEmail must be true or false")
    if not settings.smtp_host:
        raise InvalidRequest("policy.verifyEmail needs mail: the server's smtp.host is not set")
    return True


def _passcode(value: Any) -> str:
    low, high = PASSCODE_LENGTH
    if not isinstance(value, str) or not low <= len(value) <= high:
        raise InvalidRequest(f"policy.passcode must be a string of {low} to {high} characters")
    return value


async def _agreement(db: Db, account: Account, value: Any) -> Any:
    agreements.require_plan(account)
    if not isinstance(value, str):
        raise InvalidRequest("policy.agreementId must be an agreement id")
    try:
        return agreements.reference(await agreements.latest_version(db, account.id, value))
    except NotFound:
        raise InvalidRequest("policy.agreementId names no agreement of this account") from None


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


def session_gates(policy: PolicyDoc) -> list[str]:
    """The gates of `policy` a reader passes inside a viewer session, in order."""
    present = {"verifyEmail": policy.get("verifyEmail", False),
               "passcode": "passcodeHash" in policy, "agreement": "agreement" in policy}
    return [gate for gate in SESSION_GATES if present[gate]]


def policy_json(policy: PolicyDoc) -> dict[str, Any]:
    """The policy as the owner sees it: the passcode only as `"passcode": true`."""
    shown: dict[str, Any] = {}
    if policy.get("verifyEmail"):
        shown["verifyEmail"] = True
    if "passcodeHash" in policy:
        shown["passcode"] = True
    if "agreement" in policy:
        ref = policy["agreement"]
        shown.update(agreementId=ref["id"], agreementVersion=ref["version"],
                     agreementSha256=ref["sha256"])
    if "allowedIps" in policy:
        shown["allowedIps"] = list(policy["allowedIps"])
    if "notBefore" in policy:
        shown["notBefore"] = iso_utc(policy["notBefore"])
    if "maxOpens" in policy:
        shown["maxOpens"] = policy["maxOpens"]
    return shown

"""A live link's new expiry, its token unchanged (`PATCH /v1/views/:token`, the console's
"Extend").

The new expiry is given as `expiresAt` (an ISO 8601 time with a zone) or `ttlSeconds` (from
now), exactly one of them, and must lie within the plan's bounds from now (`minViewSeconds` to
`maxViewSeconds`, as at creation): it may lengthen or shorten the link. Only a live link changes:
a revoked, expired or spent one is 404 as on every read (the spec makes them indistinguishable),
so an ended link is never brought back; the owner makes a new one. A link whose `notBefore` gate
lies after the new expiry is refused: it could never be opened."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import LinkDoc
from vaultd.secrets import digest, is_token
from vaultd.services.accounts import link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.files.files import is_uuid
from vaultd.services.links.links import LINK_NOT_FOUND, is_live
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.timefmt import utcnow

ONE_OF = "give exactly one of expiresAt and ttlSeconds"
AFTER_NOT_BEFORE = "the new expiry must come after the link's notBefore"


def _expiry_bounds(account: Account, now: datetime) -> tuple[datetime, datetime]:
    plan = account.plan
    return (now + timedelta(seconds=plan.minViewSeconds),
            now + timedelta(seconds=plan.maxViewSeconds))


def parse_new_expiry(body: dict[str, Any], account: Account, now: datetime) -> datetime:
    if ("expiresAt" in body) == ("ttlSeconds" in body):
        raise InvalidRequest(ONE_OF)
    plan = account.plan
    low, high = _expiry_bounds(account, now)
    if "ttlSeconds" in body:
        ttl = body["ttlSeconds"]
        if (isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl)
                or not plan.minViewSeconds <= ttl <= plan.maxViewSeconds):
            raise InvalidRequest(f"ttlSeconds must be a number between {plan.minViewSeconds} "
                                 f"and {plan.maxViewSeconds} on plan {plan.name}")
        return now + timedelta(seconds=int(ttl))
    message = (f"expiresAt must be an ISO 8601 time with a zone, from {plan.minViewSeconds} to "
               f"{plan.maxViewSeconds} seconds from now on plan {plan.name}")
    raw = body["expiresAt"]
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00")) if isinstance(raw, str) \
            else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None or not low <= moment <= high:
        raise InvalidRequest(message)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


async def _set(db: Db, link: LinkDoc | None, expires_at: datetime) -> datetime:
    if link is None or not is_live(link):
        raise NotFound(LINK_NOT_FOUND)
    not_before = link.get("policy", {}).get("notBefore")
    if not_before is not None and not_before >= expires_at:
        raise InvalidRequest(AFTER_NOT_BEFORE)
    # Conditional on still being live: a revoke or the old expiry passing meanwhile wins.
    changed = await db.links.update_one(
        {"_id": link["_id"], "revoked": False, "expiresAt": {"$gt": utcnow()},
         "exhausted": {"$ne": True}},
        {"$set": {"expiresAt": expires_at}})
    if not changed.matched_count:
        raise NotFound(LINK_NOT_FOUND)
    # A shorter life counts: the file's and the account's bounds come down to it.
    await link_counts.expiry_moved(db, link["accountId"], link["fileId"], expires_at)
    return expires_at


async def extend_by_token(db: Db, account: Account, token: str,
                          body: dict[str, Any]) -> datetime:
    require_caller(Permission.CHANGE_CONTENT)
    expires_at = parse_new_expiry(body, account, utcnow())
    if not is_token(token):
        raise NotFound(LINK_NOT_FOUND)
    link = await db.links.find_one({"hash": digest(token), "accountId": account.id})
    return await _set(db, link, expires_at)


async def extend_by_id(db: Db, account: Account, file_id: str, link_id: str,
                       body: dict[str, Any]) -> datetime:
    """The same by the link's id within its file (as `GET /files/:id/views` lists it)."""
    expires_at = parse_new_expiry(body, account, utcnow())
    if not is_uuid(file_id) or not is_uuid(link_id):
        raise NotFound(LINK_NOT_FOUND)
    link = await db.links.find_one({"_id": link_id.lower(), "accountId": account.id,
                                    "fileId": file_id.lower()})
    return await _set(db, link, expires_at)

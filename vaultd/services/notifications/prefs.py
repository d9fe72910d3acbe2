"""What a member asked to be mailed about: read and changed by the member alone."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from vaultd.db import Db
from vaultd.errors import InvalidRequest
from vaultd.records.notifications import NotificationPrefsDoc
from vaultd.timefmt import utcnow

DIGEST_EVERY = timedelta(days=1)
FIELDS = ("firstOpen", "dailyDigest")


class PrefsJson(TypedDict):
    firstOpen: bool
    dailyDigest: bool


def as_json(doc: NotificationPrefsDoc | None) -> PrefsJson:
    if doc is None:  # nothing asked yet: nothing is mailed
        return {"firstOpen": False, "dailyDigest": False}
    return {"firstOpen": doc["firstOpen"], "dailyDigest": doc["dailyDigest"]}


async def read(db: Db, member_id: str) -> PrefsJson:
    return as_json(await db.notification_prefs.find_one({"_id": member_id}))


def parse(body: Any) -> dict[str, bool]:
    """The fields given, each a boolean; at least one, and nothing else."""
    if not isinstance(body, dict) or not body:
        raise InvalidRequest("send an object with firstOpen and/or dailyDigest")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise InvalidRequest(f"unknown field: {unknown[0]} (firstOpen, dailyDigest)")
    for name, value in body.items():
        if not isinstance(value, bool):
            raise InvalidRequest(f"{name} must be true or false")
    return dict(body)


async def change(db: Db, account_id: str, member_id: str, wanted: dict[str, bool]
                 ) -> PrefsJson:
    """Set what was given; a digest switched on is first due a day from now (the first one
    reports a whole day), one switched off is due never."""
    now = utcnow()
    before = as_json(await db.notification_prefs.find_one({"_id": member_id}))
    after: PrefsJson = {"firstOpen": wanted.get("firstOpen", before["firstOpen"]),
                        "dailyDigest": wanted.get("dailyDigest", before["dailyDigest"])}
    changes: dict[str, Any] = {**after, "accountId": account_id, "updatedAt": now}
    if after["dailyDigest"] != before["dailyDigest"]:
        changes["digestDueAt"] = now + DIGEST_EVERY if after["dailyDigest"] else None
    await db.notification_prefs.update_one(
        {"_id": member_id}, {"$set": changes, "$setOnInsert": _no_digest(after)}, upsert=True)
    return after


def _no_digest(after: PrefsJson) -> dict[str, datetime | None]:
    # A record first written with the digest off still carries the field the sweep reads.
    return {} if after["dailyDigest"] else {"digestDueAt": None}


async def wants_open_mail(db: Db, member_id: str) -> bool:
    doc = await db.notification_prefs.find_one({"_id": member_id}, {"firstOpen": 1})
    return bool(doc and doc.get("firstOpen"))

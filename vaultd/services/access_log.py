"""The access log: one entry per action on a file (spec 2.4 and 6)."""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import AsyncIterator
from typing import Any

from vaultd.db import Db
from vaultd.records import AccessLogDoc, Action
from vaultd.timefmt import iso_utc, utcnow

LATEST = 200


def valid_ip(value: str | None) -> str | None:
    """A syntactically valid IPv4/IPv6 address in canonical form, else None (ignored, unlogged)."""
    if not value:
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


async def record(
    db: Db,
    account_id: str,
    file_id: str,
    action: Action,
    *,
    viewer_email: str | None = None,
    ip: str | None = None,
    page: int | None = None,
) -> str:
    """Appends an entry; returns its id."""
    entry: AccessLogDoc = {
        "_id": str(uuid.uuid4()),
        "accountId": account_id,
        "fileId": file_id,
        "action": action,
        "at": utcnow(),
    }
    if viewer_email:
        entry["viewerEmail"] = viewer_email
    if ip:
        entry["ip"] = ip
    if page is not None:
        entry["page"] = page
    await db.access_log.insert_one(entry)
    return entry["_id"]


async def withdraw(db: Db, entry_id: str) -> None:
    """Removes an entry written ahead of an action that then did not happen (a page that was
    rendered but not served). Entries of actions that happened are never removed."""
    await db.access_log.delete_one({"_id": entry_id})


def entry_json(doc: AccessLogDoc) -> dict[str, Any]:
    out: dict[str, Any] = {
        "at": iso_utc(doc["at"]),
        "fileId": doc["fileId"],
        "action": doc["action"],
    }
    if "viewerEmail" in doc:
        out["viewerEmail"] = doc["viewerEmail"]
    if "ip" in doc:
        out["ip"] = doc["ip"]
    if "page" in doc:
        out["page"] = doc["page"]
    return out


async def latest_for_file(db: Db, file_id: str) -> list[dict[str, Any]]:
    cursor = db.access_log.find({"fileId": file_id}).sort([("at", -1), ("_id", -1)]).limit(LATEST)
    return [entry_json(doc) async for doc in cursor]


async def export_account(db: Db, account_id: str) -> AsyncIterator[dict[str, Any]]:
    """Every entry of an account, oldest first, including those of deleted files."""
    async for doc in db.access_log.find({"accountId": account_id}).sort("at", 1):
        yield entry_json(doc)

"""Room links: one reader's link to a room, optionally scoped to some of its folders.

Like a file's view link (`services.links.links`): only the token's SHA-256 is stored and whether a
link is live is read from the database on every request. A link's scope is folder ids: what
those folders hold at the moment of each request is what it may read.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo.errors import DuplicateKeyError

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import PolicyDoc, RoomDoc, RoomLinkDoc
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.accounts import link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.common.acting import acting
from vaultd.services.gates.policy import parse_policy
from vaultd.services.links.links import (
    DEFAULT_TTL,
    LINK_NOT_FOUND,
    parse_email,
    parse_ttl,
    parse_viewer_name,
)
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.notifications import owners
from vaultd.services.rooms.activity import room_revoked
from vaultd.timefmt import utcnow

MAX_FOLDER_IDS = 100


@dataclass(frozen=True)
class RoomLinkRequest:
    viewer_email: str
    viewer_name: str
    ttl_seconds: int
    folder_ids: list[str] | None
    policy: PolicyDoc | None = None  # the same gates as a file link's (services.gates.policy)


async def parse_folder_ids(db: Db, room: RoomDoc, value: Any) -> list[str] | None:
    """None (the whole room) or distinct ids of folders of this room."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or len(value) > MAX_FOLDER_IDS \
            or not all(isinstance(item, str) for item in value):
        raise InvalidRequest(f"folderIds must be a list of 1 to {MAX_FOLDER_IDS} folder ids")
    wanted = sorted(set(value))
    found = await db.room_items.count_documents(
        {"_id": {"$in": wanted}, "roomId": room["_id"], "type": "folder"})
    if found != len(wanted):
        raise InvalidRequest("folderIds must be ids of folders of this room")
    return wanted


async def parse_request(db: Db, settings: Settings, room: RoomDoc, account: Account,
                        body: dict[str, Any]) -> RoomLinkRequest:
    """The link asked for; `policy` is read by the file links' parser (one implementation)."""
    email = parse_email(body.get("viewerEmail"))
    ttl = parse_ttl(body.get("ttlSeconds", DEFAULT_TTL), account)
    folder_ids = await parse_folder_ids(db, room, body.get("folderIds"))
    policy = await parse_policy(db, settings, account, body.get("policy"),
                                utcnow() + timedelta(seconds=ttl))
    return RoomLinkRequest(email, parse_viewer_name(body.get("viewerName"), email), ttl,
                           folder_ids, policy)


async def create(db: Db, room: RoomDoc, request: RoomLinkRequest) -> tuple[str, datetime]:
    """Returns (token, expiresAt). The token is shown once; only its hash is stored. The link
    joins the account's live-link count (`services.accounts.link_counts`)."""
    require_caller(Permission.CHANGE_CONTENT)
    now = utcnow()
    expires_at = now + timedelta(seconds=request.ttl_seconds)
    while True:
        token = new_token()
        doc: RoomLinkDoc = {"_id": str(uuid.uuid4()), "hash": digest(token),
                            "accountId": room["accountId"], "roomId": room["_id"],
                            "viewerEmail": request.viewer_email,
                            "viewerName": request.viewer_name, "folderIds": request.folder_ids,
                            "createdAt": now, "expiresAt": expires_at, "revoked": False}
        if request.policy is not None:
            doc["policy"] = request.policy
            if "maxOpens" in request.policy:
                doc["opens"] = 0
        owner = await owners.link_owner(db, acting())  # whose notifications it feeds
        if owner is not None:
            doc["createdBy"] = owner
        try:
            await db.room_links.insert_one(doc)
        except DuplicateKeyError:
            continue
        await link_counts.room_links_shifted(db, room["accountId"], 1)
        return token, expires_at


def is_live(link: RoomLinkDoc) -> bool:
    # `exhausted`: an open beyond the policy's maxOpens was refused (services.gates.sessions).
    return (link.get("revoked") is False and link["expiresAt"] > utcnow()
            and not link.get("exhausted"))


async def find_live(db: Db, token: str) -> RoomLinkDoc:
    """The live room link of `token`; NotFound (the same as a file link's) otherwise."""
    link = await db.room_links.find_one({"hash": digest(token)}) if is_token(token) else None
    if link is None or not is_live(link):
        raise NotFound(LINK_NOT_FOUND)
    return link


async def revoke(db: Db, account_id: str, token: str) -> None:
    """Revoke one room link of this account; twice is fine, a foreign token is NotFound."""
    link = await db.room_links.find_one({"hash": digest(token), "accountId": account_id}
                                        ) if is_token(token) else None
    if link is None:
        raise NotFound(LINK_NOT_FOUND)
    live = link["expiresAt"] > utcnow()  # an expired link already left the count
    result = await db.room_links.update_one({"_id": link["_id"], "revoked": False},
                                            {"$set": {"revoked": True, "countedOut": live}})
    if result.modified_count:
        await link_counts.room_links_shifted(db, link["accountId"], -int(live))
        await room_revoked(db, link["accountId"], link["roomId"], 1, link)


async def _count_out_live(db: Db, room: RoomDoc) -> int:
    """The room's live links revoked and counted out of the account's links; how many."""
    live = {"roomId": room["_id"], "revoked": False, "expiresAt": {"$gt": utcnow()}}
    result = await db.room_links.update_many(live, {"$set": {"revoked": True,
                                                             "countedOut": True}})
    revoked = int(result.modified_count)
    await link_counts.room_links_shifted(db, room["accountId"], -revoked)
    return revoked


async def revoke_all(db: Db, room: RoomDoc) -> int:
    require_caller(Permission.CHANGE_CONTENT)
    revoked = await _count_out_live(db, room)
    if revoked:
        await room_revoked(db, room["accountId"], room["_id"], revoked, None)
    return revoked


async def forget_links(db: Db, room: RoomDoc) -> None:
    """A deleted room's links: the live ones counted out, the expired ones swept out of the
    count (every one not counted out expired before the sweep's now), then all deleted."""
    await _count_out_live(db, room)
    await link_counts.account_live(db, room["accountId"])
    await db.room_links.delete_many({"roomId": room["_id"]})

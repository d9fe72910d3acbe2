"""Room links: one reader's link to a room, optionally scoped to some of its folders.

Like a file's view link (`services.links.links`): only the token's SHA-256 is stored and whether a
link is live is read from the database on every request. A link's scope is folder ids: what
those folders hold at the moment of each request is what it may read.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypedDict

from pymongo.errors import DuplicateKeyError

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound
from vaultd.records import PolicyDoc, RoomDoc, RoomLinkDoc
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.accounts import link_counts, link_generations, link_shards
from vaultd.services.accounts.accounts import Account
from vaultd.services.common.acting import acting
from vaultd.services.gates.policy import parse_policy
from vaultd.services.links import revoke_jobs
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
from vaultd.services.rooms import room_counts
from vaultd.services.rooms.activity import room_links_revoking, room_revoked
from vaultd.services.rooms.records import ROOM_NOT_FOUND
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
    joins its room's and the account's live-link counts (`room_counts`,
    `services.accounts.link_counts`) in the room's link generation: a revoke-all or a deletion
    between the room's read and the count refuses it, and the link is made again under the
    room as it is now (a room being deleted is then not found)."""
    require_caller(Permission.CHANGE_CONTENT)
    owner = await owners.link_owner(db, acting())  # whose notifications it feeds
    while True:
        generation = link_generations.generation(room)
        doc = _new_link(room, request, owner, generation)
        try:
            await db.room_links.insert_one(doc["link"])
        except DuplicateKeyError:
            continue
        if await room_counts.added(db, room["_id"], generation):
            await link_counts.room_link_added(db, room["accountId"], doc["link"]["expiresAt"])
            return doc["token"], doc["link"]["expiresAt"]
        # Its token was never shown: the record goes, and the room is read again.
        await db.room_links.delete_one({"_id": doc["link"]["_id"]})
        room = await _room_now(db, room)


class _NewLink(TypedDict):
    token: str
    link: RoomLinkDoc


def _new_link(room: RoomDoc, request: RoomLinkRequest, owner: str | None,
              generation: int) -> _NewLink:
    now = utcnow()
    token = new_token()
    link_id = str(uuid.uuid4())
    doc: RoomLinkDoc = {"_id": link_id, "hash": digest(token),
                        "accountId": room["accountId"], "roomId": room["_id"],
                        "viewerEmail": request.viewer_email,
                        "viewerName": request.viewer_name, "folderIds": request.folder_ids,
                        "createdAt": now, "expiresAt": now + timedelta(seconds=request.ttl_seconds),
                        "revoked": False, "shard": link_shards.shard_of_id(link_id)}
    if generation:
        doc["generation"] = generation
    if request.policy is not None:
        doc["policy"] = request.policy
        if "maxOpens" in request.policy:
            doc["opens"] = 0
    if owner is not None:
        doc["createdBy"] = owner
    return {"token": token, "link": doc}


async def _room_now(db: Db, room: RoomDoc) -> RoomDoc:
    """The room as it is now; NotFound once its deletion claimed it (`room_deletions`)."""
    now = await db.rooms.find_one({"_id": room["_id"], "accountId": room["accountId"]})
    if now is None:
        raise NotFound(ROOM_NOT_FOUND)
    return now


def is_live(link: RoomLinkDoc) -> bool:
    # `exhausted`: an open beyond the policy's maxOpens was refused (services.gates.sessions).
    return (link.get("revoked") is False and link["expiresAt"] > utcnow()
            and not link.get("exhausted"))


async def find_live(db: Db, token: str) -> RoomLinkDoc:
    """The live room link of `token`; NotFound (the same as a file link's) otherwise."""
    link = await room_counts.read_link(db, {"hash": digest(token)}) if is_token(token) else None
    if link is None or not is_live(link):
        raise NotFound(LINK_NOT_FOUND)
    return link


async def revoke(db: Db, account_id: str, token: str) -> None:
    """Revoke one room link of this account; twice is fine, a foreign token is NotFound. A link
    its room's revoke-all or deletion already revoked (not yet written on it) is left alone."""
    link = await room_counts.read_link(db, {"hash": digest(token), "accountId": account_id}
                                       ) if is_token(token) else None
    if link is None:
        raise NotFound(LINK_NOT_FOUND)
    if link["revoked"]:
        return
    live = link["expiresAt"] > utcnow()  # an expired link already left the count
    result = await db.room_links.update_one({"_id": link["_id"], "revoked": False},
                                            {"$set": {"revoked": True, "countedOut": live}})
    # Uncounted unless a revoke-all of its generation came between (it took the room's count).
    if result.modified_count and (not live or await room_counts.revoked(db, link)):
        await link_counts.room_links_revoked(db, link["accountId"], int(live))
        await room_revoked(db, link["accountId"], link["roomId"], 1, link)


async def revoke_all(db: Db, room: RoomDoc, owner: str) -> int:
    """Every live link of the room revoked in one write (`links.revoke_jobs`, kind `room`);
    returns how many, from the room's count. The link records are marked afterwards, in the
    background, by `owner` (this instance) or by recovery."""
    require_caller(Permission.CHANGE_CONTENT)
    return await revoke_jobs.revoke_generation(
        db, revoke_jobs.ROOM, room["accountId"], room["_id"], owner, room_counts.live_unswept,
        room_links_revoking)

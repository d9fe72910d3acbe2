"""A room page's records in one round trip: the room link (by its token's hash) with its room's
link generation and state (`room_counts.ROOM_STAGE`: a revoke-all or deletion of the room
revokes it), the file's places in rooms (by the file's index) and, on the API route, the
caller's key (by its hash).

One `aggregate` on the room link, the places and the key joined to it by equality `$lookup`s
(as `api_keys.check_key` reads a key with a file link), where a room page used to send two or
three `find`s at once. SecantusDB answers an equality `$lookup` from the joined field's index;
a `$unionWith` sub-pipeline would walk the whole collection (every room's items) on every page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from vaultd.db import Db
from vaultd.errors import INVALID_KEY, Unauthorized
from vaultd.records import ApiKeyDoc, RoomItemDoc, RoomLinkDoc
from vaultd.secrets import digest, is_api_key
from vaultd.services.accounts import link_generations
from vaultd.services.accounts.api_keys import KEY_CHECK_FIELDS
from vaultd.services.rooms import room_counts

# Fields the combined read adds to the link's document (none of a room link's own).
_FILE_ID, _KEY_HASH, _PLACES, _KEY = "pageFileId", "pageKeyHash", "pagePlaces", "pageKey"


@dataclass
class PageRecords:
    link: RoomLinkDoc | None
    places: list[RoomItemDoc] = field(default_factory=list)
    key: ApiKeyDoc | None = None


async def read_together(db: Db, token: str, file_id: str, api_key: str | None = None
                        ) -> PageRecords:
    """The room link of `token`, the places of `file_id` and the key's record (when given and
    well formed), each None or empty where nothing matched. No link, nothing joined: the key
    is then read alone (its verdict comes first)."""
    key_hash = digest(api_key) if api_key is not None and is_api_key(api_key) else None
    pipeline: list[dict[str, Any]] = [
        {"$match": {"hash": digest(token)}},
        room_counts.ROOM_STAGE,  # its room's generation and state: `revoked` as they say
        {"$addFields": {_FILE_ID: {"$literal": file_id}, _KEY_HASH: {"$literal": key_hash}}},
        {"$lookup": {"from": db.room_items.name, "localField": _FILE_ID,
                     "foreignField": "fileId", "as": _PLACES}},
    ]
    if key_hash is not None:
        pipeline.append({"$lookup": {"from": db.api_keys.name, "localField": _KEY_HASH,
                                     "foreignField": "hash", "as": _KEY}})
    async for doc in await db.raw(db.room_links.name).aggregate(pipeline):
        places, keys = doc.pop(_PLACES), doc.pop(_KEY, [])
        doc.pop(_FILE_ID)
        doc.pop(_KEY_HASH)
        link_generations.fold(doc)
        return PageRecords(cast("RoomLinkDoc", doc), cast("list[RoomItemDoc]", places),
                           cast("ApiKeyDoc", keys[0]) if keys else None)
    if key_hash is None:
        return PageRecords(None)
    return PageRecords(None, key=await db.api_keys.find_one({"hash": key_hash},
                                                            KEY_CHECK_FIELDS))


def key_owner(key: ApiKeyDoc | None) -> str:
    """The account of a live key read with the page's records; Unauthorized otherwise (the
    same verdict as `api_keys.check_key`)."""
    if key is None or key.get("revokedAt") is not None:
        raise Unauthorized(INVALID_KEY)
    return key["accountId"]

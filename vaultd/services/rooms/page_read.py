"""A room page's records in one round trip: the room link (by its token's hash), the file's
places in rooms (by the file's index) and, on the API route, the caller's key (by its hash).

One `aggregate` with `$unionWith` (as `api_keys.check_key` reads a key with a file link) where
a room page used to send two or three `find`s at once: on the embedded database each command
costs its own dispatch, so a room page paid about one more command's CPU than a file link's.
Each branch matches on a unique or selective index; nothing is walked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from vaultd.db import Db
from vaultd.errors import INVALID_KEY, Unauthorized
from vaultd.records import ApiKeyDoc, RoomItemDoc, RoomLinkDoc
from vaultd.secrets import digest, is_api_key
from vaultd.services.api_keys import KEY_CHECK_FIELDS

PLACE_FIELDS = {"roomId": 1, "parentId": 1}
_OF = "of"  # which collection a document of the combined read came from


@dataclass
class PageRecords:
    link: RoomLinkDoc | None
    places: list[RoomItemDoc] = field(default_factory=list)
    key: ApiKeyDoc | None = None


async def read_together(db: Db, token: str, file_id: str, api_key: str | None = None
                        ) -> PageRecords:
    """The room link of `token`, the places of `file_id` and the key's record (when given and
    well formed), each None or empty where nothing matched."""
    pipeline: list[dict[str, Any]] = [
        {"$match": {"hash": digest(token)}},
        {"$addFields": {_OF: {"$literal": "link"}}},  # the whole record, as `find_live` reads
        {"$unionWith": {"coll": db.room_items.name, "pipeline": [
            {"$match": {"fileId": file_id}},
            {"$project": {**PLACE_FIELDS, _OF: {"$literal": "place"}}},
        ]}},
    ]
    if api_key is not None and is_api_key(api_key):
        pipeline.append({"$unionWith": {"coll": db.api_keys.name, "pipeline": [
            {"$match": {"hash": digest(api_key)}},
            {"$project": {**KEY_CHECK_FIELDS, _OF: {"$literal": "key"}}},
        ]}})
    found = PageRecords(None)
    async for doc in await db.raw(db.room_links.name).aggregate(pipeline):
        kind = doc.pop(_OF)
        if kind == "link":
            found.link = cast("RoomLinkDoc", doc)
        elif kind == "place":
            found.places.append(cast("RoomItemDoc", doc))
        else:
            found.key = cast("ApiKeyDoc", doc)
    return found


def key_owner(key: ApiKeyDoc | None) -> str:
    """The account of a live key read with the page's records; Unauthorized otherwise (the
    same verdict as `api_keys.check_key`)."""
    if key is None or key.get("revokedAt") is not None:
        raise Unauthorized(INVALID_KEY)
    return key["accountId"]

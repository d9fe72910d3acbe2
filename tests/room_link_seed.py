"""Room links written in bulk in the services' record shape, counted on their room and account as
`room_links.create` counts them: for the tests of a room's revoke-all and deletion at scale
(thousands of links made one by one through the API would take minutes)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from vaultd.db import Db
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import link_shards
from vaultd.timefmt import utcnow

INSERT_BATCH = 1000


def room_link_doc(account_id: str, room_id: str, expires_at: datetime) -> dict[str, Any]:
    link_id = str(uuid.uuid4())
    return {"_id": link_id, "hash": digest(new_token()), "accountId": account_id,
            "roomId": room_id, "viewerEmail": "kim@example.com", "viewerName": "Kim",
            "folderIds": None, "createdAt": utcnow(), "expiresAt": expires_at,
            "revoked": False, "shard": link_shards.shard_of_id(link_id)}


async def seed_room_links(db: Db, account_id: str, room_id: str, count: int) -> None:
    """`count` live room links, expiring over the next days, counted on the room and the
    account (the room's generation 0: the field absent, as a new room's links have it)."""
    now = utcnow()
    made = [room_link_doc(account_id, room_id, now + timedelta(days=1 + n % 30))
            for n in range(count)]
    for first in range(0, count, INSERT_BATCH):
        await db.raw("room_links").insert_many(made[first:first + INSERT_BATCH], ordered=False)
    for collection, key in (("rooms", room_id), ("accounts", account_id)):
        await db.raw(collection).update_one({"_id": key}, {"$inc": {"linkCount.live": count}})


async def seed_room_items(db: Db, account_id: str, room_id: str, count: int) -> None:
    """`count` folders at the room's top level, counted on its `itemCount`."""
    now = utcnow()
    await db.raw("room_items").insert_many(
        [{"_id": str(uuid.uuid4()), "roomId": room_id, "accountId": account_id,
          "type": "folder", "name": f"Folder {n}", "parentId": None, "position": n + 1,
          "createdAt": now} for n in range(count)])
    await db.raw("rooms").update_one({"_id": room_id}, {"$inc": {"itemCount": count}})

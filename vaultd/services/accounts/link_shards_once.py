"""The start-up pass that gives a shard to the links written before links carried one, where an
account's or a room's count can still read them (`link_shards.read_probed`).

A count reads the links that expired since its sweep (`link_counts`, `rooms.room_counts`), so a
link that expired before its account's sweep (and its room's) is never read by one again. The
pass writes `shard` on the others only: each account's links past its `sweptAt`, and each
room's links past the earlier of its own and its account's. Every write costs the embedded
database about 0.75 ms (a link's dozen indexes), so the links long expired, often most of
them, are left as they are. Files are not flagged: a file's expired page can reach a link of
any age, so a file uploaded before shards keeps reading one range (`link_shards.sharded`).

It runs after the links are numbered (`link_numbers.number_links_once`), before vaultd serves;
a marker in `migrations` keeps later start-ups from looking again (a restore clears it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.services.accounts.link_counts import NEVER
from vaultd.services.accounts.link_shards import shard_of, shard_of_id
from vaultd.services.common import id_ranges
from vaultd.timefmt import utcnow

SHARD_MIGRATION = "link-shards"
WRITE_BATCH = 500  # updates a bulk write carries: about 0.4 s of the database's time


async def link_shards_once(db: Db) -> None:
    """Give every link and room link a count can still read its shard, once."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": SHARD_MIGRATION}) is not None:
        return
    swept: dict[str, datetime] = {}
    async for batch in id_ranges.batches(db.raw(db.accounts.name), {"linkCount.sweptAt": 1}):
        for account in batch:
            since = _swept_at(account)
            swept[account["_id"]] = since
            await _shard(db.raw(db.links.name), {"accountId": account["_id"]}, since,
                         _file_link_shard)
    async for batch in id_ranges.batches(db.raw(db.rooms.name),
                                         {"accountId": 1, "linkCount.sweptAt": 1}):
        for room in batch:
            since = min(_swept_at(room), swept.get(room["accountId"], NEVER))
            await _shard(db.raw(db.room_links.name), {"roomId": room["_id"]}, since,
                         lambda link: shard_of_id(link["_id"]))
    await marks.update_one({"_id": SHARD_MIGRATION}, {"$set": {"at": utcnow()}}, upsert=True)


def _swept_at(record: Mapping[str, Any]) -> datetime:
    at = (record.get("linkCount") or {}).get("sweptAt")
    return at if isinstance(at, datetime) else NEVER


async def _shard(links: AsyncCollection[Any], owner: dict[str, str], since: datetime,
                 shard: Callable[[Mapping[str, Any]], int]) -> None:
    """Write `shard(link)` on the links of `owner` expiring after `since` that have none (a
    range on `(owner, expiresAt)`)."""
    query = {**owner, "expiresAt": {"$gt": since}}
    updates: list[UpdateOne] = []
    async for link in links.find(query, {"fileId": 1, "seq": 1, "shard": 1}):
        if "shard" not in link:
            updates.append(UpdateOne({"_id": link["_id"]}, {"$set": {"shard": shard(link)}}))
        if len(updates) == WRITE_BATCH:  # written as read: an account's links never all held
            await links.bulk_write(updates, ordered=False)
            updates = []
    if updates:
        await links.bulk_write(updates, ordered=False)


def _file_link_shard(link: Mapping[str, Any]) -> int:
    if "seq" in link:
        return shard_of(link["fileId"], int(link["seq"]))
    return shard_of_id(link["_id"])  # not numbered: any shard will do for the account's ranges

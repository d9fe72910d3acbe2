"""Active-link counts kept on write, on the account and on each file, right as links expire.

A count of live links by query reads every live link (the embedded database counts by reading
each match). Instead each account and file record carries `linkCount: {live, sweptAt}`:

- `live` is +1 when a link is created and -1 when it is revoked before it expires (the link is
  then marked `countedOut`), so it counts the links not revoked whose expiry is after `sweptAt`;
- the links that expired since `sweptAt` and were not counted out are a range on the
  `expiresAt` index, read when the count is read: the answer is `live` minus those;
- a read past the record's bound (below) moves `sweptAt` to its `now` and subtracts them, only
  if `sweptAt` is still what it read (concurrent readers in any process subtract once).

Room links (`services.rooms.room_links`) count on their account and their room
(`services.rooms.room_counts`), the same way: +1 when created, -1 when revoked while live
(`countedOut`), and the account's sweep reads the range of its room links that expired too
(`room_links`' (accountId, expiresAt) index), told by their room's record which a room's
revoke-all or deletion took.

So a read costs the links that expired since the last read, and each link leaves the count
exactly once: by its revoke while live, or by the sweep past its expiry. A file's revoke-all
(`services.accounts.link_generations`) takes the file's whole live count at once; the sweep
tells the links it took from its file's record (`link_generations.counted_out`). Records without a
`linkCount` (written before it existed) get one at start-up (`db_indexes.count_links_once`).

Each record also bounds its next expiry, so that a listing of 25 files does not read 25
ranges that are nearly always empty (one `find` per file, page 1 3.5x of the empty vault's on
the `mixed` shape: docs/performance-records.md), nor an account read its two ranges (its
links' and its room links', each a probe then a read: `link_shards.read_probed`) on every
call. `nextExpiry` is a time before which none of the record's counted links expires:
- a sweep reads its range past `now` too, `ahead` of it, and sets `nextExpiry` to the
  first expiry it finds there, or to the range's end; `ahead` grows while the range finds
  nothing and shrinks when it finds many, so that a look ahead stays cheap;
- a link's creation (a room link's too, on its account) and an expiry's change
  (`expiry_moved`) lower it with `$min` after the link's own write, and raise `moved`: a sweep
  writes only if `moved` is still what it read, so a link counted or moved during a sweep is
  never left behind its bound;
- a read before `nextExpiry` reads no link. The bound is trusted only with `ahead` beside it:
  a `$min` on a record that a sweep never bounded (written before) makes no trusted bound.
An operator who sets a link's `expiresAt` in the database, not through the API, leaves the count
stale for at most `ahead` (the links' own liveness, read on every page, is never stale).

A file with many links reads its range per shard (`link_shards`), and an account's ranges are
read per shard when a probe of one shard finds many, so that links expiring together are never
one long read. (A room's count, `room_counts`, keeps no bound: it is read with its room.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.services.accounts import link_generations, link_shards
from vaultd.services.accounts.link_generations import FILE_FIELDS, is_generation
from vaultd.timefmt import utcnow

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
SWEEP_EVERY = timedelta(days=1)  # a room's sweep writes after expiries, or daily (room_counts)
AHEAD = timedelta(days=1)  # a record's first look past now for its next expiry
AHEAD_MOST = timedelta(days=32)  # a look that found nothing is followed by one 4x as long
AHEAD_LEAST = timedelta(minutes=1)  # ...and one that found more than AHEAD_HOLDS by a 4x shorter
AHEAD_HOLDS = 64
OWNERS_PER_READ = 100  # file or room records an account's sweep reads in one `$in`
# What decides whether a link is live (`links.is_live`), read with an API key's check too
# (`api_keys.check_key`): declared here, below both, so that accounts never imports links.
# `fileId` and `generation`: the link's file is joined to it (`link_generations.FILE_STAGE`).
LIVENESS_FIELDS = {"revoked": 1, "expiresAt": 1, "exhausted": 1, "fileId": 1, "generation": 1}
# What a sweep reads of an expired link.
_SWEPT_FIELDS = {"countedOut": 1, "fileId": 1, "generation": 1, "expiresAt": 1}
_ROOM_SWEPT_FIELDS = {"countedOut": 1, "roomId": 1, "generation": 1, "expiresAt": 1}


async def added_in_generation(db: Db, account_id: str, file_id: str, generation: int,
                              expires_at: datetime) -> bool:
    """A link of `generation`, expiring at `expires_at`, was created for `file_id`: counted if
    the file is still at that generation (False: a revoke-all came between, the caller replaces
    its link and asks again)."""
    result = await db.files.update_one(
        {"_id": file_id, "linkGeneration": is_generation(generation)},
        {"$inc": {"linkCount.live": 1, "linkCount.moved": 1},
         "$min": {"linkCount.nextExpiry": expires_at}})
    if not result.modified_count:
        return False
    await db.accounts.update_one({"_id": account_id}, {
        "$inc": {"linkCount.live": 1, "linkCount.moved": 1},
        "$min": {"linkCount.nextExpiry": expires_at}})
    return True


async def expiry_moved(db: Db, account_id: str, file_id: str, expires_at: datetime) -> None:
    """A link of `file_id` now expires at `expires_at` (written on the link first)."""
    await db.files.update_one({"_id": file_id}, _lowered(expires_at))
    await account_expiry_moved(db, account_id, expires_at)


async def account_expiry_moved(db: Db, account_id: str, expires_at: datetime) -> None:
    """A link or room link of the account now expires at `expires_at` (written on it first)."""
    await db.accounts.update_one({"_id": account_id}, _lowered(expires_at))


def _lowered(expires_at: datetime) -> dict[str, Any]:
    return {"$inc": {"linkCount.moved": 1}, "$min": {"linkCount.nextExpiry": expires_at}}


async def revoked_in_generation(db: Db, link: Mapping[str, Any], count: int) -> None:
    """`count` links of `link`'s file and generation were revoked while live: uncounted unless
    a revoke-all of that generation came first (it took them with the file's whole count)."""
    result = await db.files.update_one(
        {"_id": link["fileId"],
         "linkGeneration": is_generation(link_generations.generation(link, "generation"))},
        {"$inc": {"linkCount.live": -count}})
    if result.modified_count:
        await db.accounts.update_one({"_id": link["accountId"]},
                                     {"$inc": {"linkCount.live": -count}})


async def room_link_added(db: Db, account_id: str, expires_at: datetime) -> None:
    """A room link expiring at `expires_at` was created and counted on its room: the account's
    count (a room link is no file's) and its bound."""
    await db.accounts.update_one({"_id": account_id}, {
        "$inc": {"linkCount.live": 1, "linkCount.moved": 1},
        "$min": {"linkCount.nextExpiry": expires_at}})


async def room_links_revoked(db: Db, account_id: str, count: int) -> None:
    """`count` room links were revoked while live and marked `countedOut`."""
    if count:
        await db.accounts.update_one({"_id": account_id}, {"$inc": {"linkCount.live": -count}})


async def account_live(db: Db, account_id: str) -> int:
    """The account's links that are neither revoked nor expired, now."""
    doc = await db.accounts.find_one({"_id": account_id}, {"linkCount": 1})
    if doc is None:
        return 0
    return await _live(db.raw(db.accounts.name), dict(doc), "accountId", db)


async def file_live(db: Db, file_id: str) -> int:
    """The file's links that are neither revoked nor expired, now."""
    doc = await db.files.find_one({"_id": file_id},
                                  {"linkCount": 1, **FILE_FIELDS, **link_shards.FIELDS})
    if doc is None:
        return 0
    return await _live(db.raw(db.files.name), dict(doc), "fileId", db)


async def files_live(db: Db, docs: list[dict[str, Any]]) -> dict[str, int]:
    """`file_live` of listed file records (read with their `linkCount`, `FILE_FIELDS` and
    `link_shards.FIELDS`)."""
    raw = db.raw(db.files.name)
    counts = await asyncio.gather(*(_live(raw, doc, "fileId", db) for doc in docs))
    return {doc["_id"]: count for doc, count in zip(docs, counts, strict=True)}


async def file_live_unswept(db: Db, doc: dict[str, Any], now: datetime) -> int:
    """`file_live` of a file record read with its `linkCount`, `FILE_FIELDS` and
    `link_shards.FIELDS`, at `now`, not written back: for a writer that sets the count itself
    (a revoke-all sets it to 0)."""
    return await _live(db.raw(db.files.name), doc, "fileId", db, now, sweep=False)


async def _live(records: AsyncCollection[dict[str, Any]], doc: dict[str, Any], key: str,
                db: Db, now: datetime | None = None, *, sweep: bool = True) -> int:
    counted = doc.get("linkCount") or {}
    swept: datetime | None = counted.get("sweptAt")
    live = int(counted.get("live", 0))
    if live <= 0:
        return 0  # the links expired since the sweep are among those counted: none
    now = now or utcnow()
    if "ahead" in counted and now < counted.get("nextExpiry", NEVER):
        return live  # none of its counted links expired since the sweep

    # Never swept: from the start of time, once (the first read sweeps). Not the record's
    # creation: a link's expiry may be set back, by an operator or a test standing in for time.
    since = swept or NEVER
    ahead = timedelta(seconds=float(counted.get("ahead", AHEAD.total_seconds())))
    until = now + ahead if sweep else now
    # The range alone is the filter (an extra field would make SecantusDB scan every link); a
    # file with many links is read per shard, an account's range when a probe finds many.
    ended = {key: doc["_id"], "expiresAt": {"$gt": since, "$lte": until}}
    if key == "fileId":
        found = await _still_counted(
            db, await link_shards.read_range(db.links, doc, ended, _SWEPT_FIELDS), key, now,
            doc)
    else:  # an account: its room links in the same range, read beside its links
        read, room_read = await asyncio.gather(
            link_shards.read_probed(db.links, ended, _SWEPT_FIELDS),
            link_shards.read_probed(db.room_links, ended, _ROOM_SWEPT_FIELDS))
        found = [*await _still_counted(db, read, "fileId", now),
                 *await _still_counted(db, room_read, "roomId", now)]
    expired = sum(1 for link in found if link["expiresAt"] <= now)
    if sweep:
        # Only if no one swept meanwhile, and no link was counted or moved since the record was
        # read. A missing field is asked with $exists, not None: SecantusDB's index does not
        # match None to a missing field (once per record).
        query = {"_id": doc["_id"], "linkCount.sweptAt": swept or {"$exists": False},
                 "linkCount.moved": counted.get("moved", {"$exists": False})}
        coming = [link["expiresAt"] for link in found if link["expiresAt"] > now]
        change = {"linkCount.sweptAt": now, "linkCount.nextExpiry": min(coming, default=until),
                  "linkCount.ahead": _next_ahead(ahead, len(coming)).total_seconds()}
        await records.update_one(query, {"$inc": {"linkCount.live": -expired}, "$set": change})
    return max(live - expired, 0)


def _next_ahead(ahead: timedelta, coming: int) -> timedelta:
    """How far the file's next sweep looks past its `now`, after one that found `coming`."""
    if not coming:
        return min(ahead * 4, AHEAD_MOST)
    if coming > AHEAD_HOLDS:
        return max(ahead / 4, AHEAD_LEAST)
    return ahead


async def _still_counted(db: Db, links: list[dict[str, Any]], key: str, now: datetime,
                         owner: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Those of these links still in the counts: a link leaves them by its revoke while live,
    or by its file's or room's revoke-all or deletion, whether or not it expired since
    (`link_generations.counted_out`), read from `owner` if given, else from the records its
    `key` names. A link yet to expire is kept unread: it only lowers a bound, which may be
    early, and an account's look ahead may reach thousands of files."""
    links = [link for link in links if not link.get("countedOut")]
    if owner is not None:
        return [link for link in links if not link_generations.counted_out(link, owner)]
    ended = sorted({link[key] for link in links if link["expiresAt"] <= now})
    owners = await _owners(db.raw(db.files.name if key == "fileId" else db.rooms.name), ended)
    return [link for link in links if link["expiresAt"] > now
            or not link_generations.counted_out(link, owners.get(link[key]))]


async def _owners(records: AsyncCollection[dict[str, Any]], ids: list[str]
                  ) -> dict[str, dict[str, Any]]:
    """The file or room records of `ids` (their generations and state), OWNERS_PER_READ at a
    time: the embedded database answers a long `$in` slower than several short ones (3,000
    ids in one: 600 ms; 100: under 5 ms)."""
    found: dict[str, dict[str, Any]] = {}
    for first in range(0, len(ids), OWNERS_PER_READ):
        chunk = ids[first:first + OWNERS_PER_READ]
        async for doc in records.find({"_id": {"$in": chunk}}, FILE_FIELDS):
            found[doc["_id"]] = dict(doc)
    return found

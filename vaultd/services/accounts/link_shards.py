"""Links by expiry, read in shards where a range can hold many, so that links expiring
together never make one long read.

A file's count (`link_counts`) reads the links that expired since its last sweep, and its
expired page (`links.link_states`) the links listed active whose expiry passed: each a range on
the expiry. The embedded database reads a range whole before any limit and counts by reading,
so 5,000 links made with one `ttlSeconds` at once were one read of 50-115 ms when they expired,
which every other request waited behind (`python -m bench.expiry_burst`). No window on the
expiry bounds that: the window that meets a burst holds all of it.

So every link carries `shard`, written with it: a file link its number plus its file's own
offset, modulo SHARDS (`shard_of`); a room link, unnumbered, a hash of its `_id`
(`shard_of_id`). A file uploaded since says `linkShards: SHARDS`. A range of such a file, once
it holds more than SHARDED_ABOVE link records, is read as `read_probed` reads an account's, on
`(fileId, shard, expiresAt)` or `(fileId, listed, shard, expiresAt)`. The reads are a partition
of the range, so what is counted or listed does not change; a smaller file's range stays one
read (the probes would cost it more than its links do). A file uploaded before shards (no
`linkShards`) is read as before, in one range: its expired page can reach links of any age.

SHARDS is 256 so that a shard of 100,000 links expiring together (a mailing to that many
recipients at once) is a read of about 400, 22-47 ms on the 2-core machine measured (up to
71 ms for the first reads after they were written: at the bar, not under it); at the 32
shards links had first, a shard passed 50 ms from about 30,000 (a read costs about 2 ms and
then 25-60 us a link, however the links are spread). The database answers neither a range
nor an `$in` nor an `$or` of shards from the index (each scans the collection), so every shard
is a read of its own, and 256 of them cost about half a second: which is why a range is
probed first. A file uploaded while links had 32 (`linkShards: true`) keeps them, its new
links too (OLD_SHARDS: its reads are a partition of 32), and reads its 32 shards once it
holds many, as it did.

An account's ranges (its count reads its links and room links expired since its sweep) and a
room's have no record total to tell how many they can hold, so `read_probed` reads two shards
drawn at random first, and the rest one by one only when they show many. The links of a file
with 32 shards, and links written before SHARDS was 256, lie in the first 32 only; so one probe
is drawn there and one among the others, which together tell both kinds apart. The file's
offset is what spreads an account's burst of one link each on many files (all numbered 1) over
the shards; the draw is what keeps a client from emptying the probed shards by where it sets
expiries.

Considered and left: a shard drawn from the link's random `_id` (a burst's shards would hold
about a SHARDS-th each, where consecutive numbers give exactly that), a second field of finer
shards beside `shard` (five more indexes on every link's write), and counts by expiry kept on write
(bounded by the seconds a sweep spans rather than the links, but a second write on every
link's creation, revoke and new expiry that a crash between would leave disagreeing with the
file's `live` count): docs/performance-records.md, *Links expiring together*.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Mapping
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

SHARDS = 256
OLD_SHARDS = 32  # of a file flagged `linkShards: true`, and of links written before SHARDS
# Link records: one range of them reads in about 30 ms at most (a range of 3,200 read in 83 ms
# on the 2-core machine of docs/performance-records.md).
SHARDED_ABOVE = 1_000
FLAG = "linkShards"  # on a file record: every link of it carries `shard` (SHARDS, or True: 32)
# What `sharded` reads of a file's record, besides what its caller reads.
FIELDS = {FLAG: 1, "linkTotal": 1}
SHARD_BATCH = 10_000  # documents a shard's read returns in its first batch


def shards_of(file: Mapping[str, Any]) -> int:
    """How many shards the links of `file` (its record read with FIELDS) fall in."""
    return OLD_SHARDS if file.get(FLAG) is True else SHARDS


def shard_of(file_id: str, seq: int, shards: int | None = None) -> int:
    """The shard of the link numbered `seq` of the file `file_id`, among `shards` (SHARDS
    unless the file has its own: `shards_of`). The offset is drawn among SHARDS, so a link's
    shard among OLD_SHARDS is the one it had when they were all there were."""
    return (seq + shard_of_id(file_id)) % (shards or SHARDS)


def shard_of_id(record_id: str) -> int:
    """A shard drawn from a record's id: a room link's, or a file's offset."""
    return zlib.crc32(record_id.encode()) % SHARDS


def sharded(file: Mapping[str, Any], at_most: int | None = None) -> bool:
    """Whether a range of `file`'s links (its record read with FIELDS) is read per shard:
    when the file has shards and holds more than SHARDED_ABOVE link records, of which the
    range can hold `at_most` (None: all)."""
    if not file.get(FLAG):
        return False
    records = int(file.get("linkTotal", 0))
    return (records if at_most is None else min(records, at_most)) > SHARDED_ABOVE


async def read_range(links: AsyncCollection[Any], file: Mapping[str, Any], query: dict[str, Any],
                     projection: Mapping[str, Any] | None = None, *,
                     at_most: int | None = None) -> list[dict[str, Any]]:
    """The links of `file` matching `query` (its `fileId`, maybe `listed`, and a range of
    `expiresAt`), of which there can be `at_most`: one read, or per shard (`sharded`): probed
    first (`read_probed`), or, for a file of 32 shards, each of them."""
    if not sharded(file, at_most):
        return await _read(links, query, projection)
    if shards_of(file) != OLD_SHARDS:
        return await read_probed(links, query, projection)
    found: list[dict[str, Any]] = []
    for shard in range(OLD_SHARDS):  # one after another: the database runs one at a time anyway
        found += await _read(links, {**query, "shard": shard}, projection)
    return found


async def read_probed(records: AsyncCollection[Any], query: dict[str, Any],
                      projection: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The records matching `query` (an owner's id and a range of `expiresAt`, on an index of
    those with `shard` between): two shards drawn at random are read first, one among the first
    OLD_SHARDS and one among the rest; then the whole range in one read if they show at most
    SHARDED_ABOVE in it (`_estimate`), else the other shards one by one. Every record that can
    be in the range must carry `shard` (`link_shards_once`)."""
    low = secrets.randbelow(OLD_SHARDS)
    high = OLD_SHARDS + secrets.randbelow(SHARDS - OLD_SHARDS)
    in_low = await _read(records, {**query, "shard": low}, projection)
    in_high = await _read(records, {**query, "shard": high}, projection)
    if _estimate(len(in_low), len(in_high)) <= SHARDED_ABOVE:
        return await _read(records, query, projection)
    found = in_low + in_high
    for shard in range(SHARDS):  # one after another: the database runs one at a time anyway
        if shard not in (low, high):
            found += await _read(records, {**query, "shard": shard}, projection)
    return found


def _estimate(in_low: int, in_high: int) -> int:
    """The records of a range, from one shard of its first OLD_SHARDS and one of the rest: a
    record written among OLD_SHARDS lies in one of the first (a 32nd of them in each), one
    written among SHARDS in any (a 256th in each). So the first probe holds old/32 + new/256
    and the second new/256: old + new = 32 x first + 224 x second, off the true count only by
    chance's spread."""
    return OLD_SHARDS * in_low + (SHARDS - OLD_SHARDS) * in_high


async def _read(records: AsyncCollection[Any], query: dict[str, Any],
                projection: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    # In one batch: the database builds the answer whole before the first batch anyway, and a
    # second (past 101 documents) would be a round trip for nothing.
    return [dict(record) async for record in records.find(query, projection)
            .batch_size(SHARD_BATCH)]

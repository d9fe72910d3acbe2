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
(`shard_of_id`). A file uploaded since says `linkShards: true`. A range of such a file, once
it holds more than SHARDED_ABOVE link records, is read as SHARDS ranges, one per shard, on
`(fileId, shard, expiresAt)` or `(fileId, listed, shard, expiresAt)`: each a SHARDS-th of a
burst (consecutive numbers fall in consecutive shards). The reads are a partition of the range,
so what is counted or listed does not change; a smaller file's range stays one read (SHARDS
round trips would cost it more than its links do). A file uploaded before (no `linkShards`) is
read as before, in one range: its expired page can reach links of any age.

An account's ranges (its count reads its links and room links expired since its sweep) and a
room's have no record total to tell how many they can hold, so `read_probed` reads one shard
drawn at random first, and the rest per shard only when it holds many. The file's offset is what
spreads an account's burst of one link each on many files (all numbered 1) over the shards;
the draw is what keeps a client from emptying the probed shard by where it sets expiries.

Considered and left: a shard drawn from the link's random `_id` (a burst's shards would hold
about a 32nd each, where consecutive numbers give exactly that), and counts by expiry kept on write
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

SHARDS = 32
SHARDED_ABOVE = 2_000  # link records: one range of them reads in about 30 ms at most
FLAG = "linkShards"  # on a file record: every link of it carries `shard`
# What `sharded` reads of a file's record, besides what its caller reads.
FIELDS = {FLAG: 1, "linkTotal": 1}
SHARD_BATCH = 10_000  # documents a shard's read returns in its first batch
# A probed shard holding more than this many: its range holds about SHARDS times as many, more
# than one read should take (SHARDED_ABOVE).
PROBE_FEW = SHARDED_ABOVE // SHARDS


def shard_of(file_id: str, seq: int) -> int:
    """The shard of the link numbered `seq` of the file `file_id`."""
    return (seq + shard_of_id(file_id)) % SHARDS


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
    `expiresAt`), of which there can be `at_most`: one read, or one per shard (`sharded`)."""
    if not sharded(file, at_most):
        return [dict(link) async for link in links.find(query, projection)]
    found: list[dict[str, Any]] = []
    for shard in range(SHARDS):  # one after another: the database runs one at a time anyway
        found += await _read(links, {**query, "shard": shard}, projection)
    return found


async def read_probed(records: AsyncCollection[Any], query: dict[str, Any],
                      projection: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The records matching `query` (an account's or a room's id and a range of `expiresAt`,
    on an index of those with `shard` between): one shard drawn at random is read first, then
    the whole range in one read if that shard held at most PROBE_FEW, else the other shards one
    by one. Every record that can be in the range must carry `shard` (`link_shards_once`)."""
    probe = secrets.randbelow(SHARDS)
    found = await _read(records, {**query, "shard": probe}, projection)
    if len(found) <= PROBE_FEW:
        return await _read(records, query, projection)
    for shard in range(SHARDS):
        if shard != probe:
            found += await _read(records, {**query, "shard": shard}, projection)
    return found


async def _read(records: AsyncCollection[Any], query: dict[str, Any],
                projection: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    # In one batch: the database builds the answer whole before the first batch anyway, and a
    # second (past 101 documents) would be a round trip for nothing.
    return [dict(record) async for record in records.find(query, projection)
            .batch_size(SHARD_BATCH)]

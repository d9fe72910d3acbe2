"""A file's links by expiry, read in shards once the file holds many, so that links expiring
together never make one long read.

A file's count (`link_counts`) reads the links that expired since its last sweep, and its
expired page (`links.link_states`) the links listed active whose expiry passed: each a range on
the expiry. The embedded database reads a range whole before any limit and counts by reading,
so 5,000 links made with one `ttlSeconds` at once were one read of 50-115 ms when they expired,
which every other request waited behind (`python -m bench.expiry_burst`). No window on the
expiry bounds that: the window that meets a burst holds all of it.

So every link of a file created since shards existed carries `shard` (its number modulo
SHARDS, written with the link), and its file record `linkShards: true` (written at upload). A
range of such a file, once it holds more than SHARDED_ABOVE link records, is read as SHARDS
ranges, one per shard, on `(fileId, shard, expiresAt)` or `(fileId, listed, shard, expiresAt)`:
each a SHARDS-th of a burst (consecutive numbers fall in consecutive shards). The reads are a
partition of the range, so what is counted or listed does not change; a smaller file's range
stays one read (SHARDS round trips would cost it more than its links do). Files uploaded before
(no `linkShards`) are read as before, in one range.

Considered and left: a shard drawn from the link's random `_id` (a burst's shards would hold
about a 32nd each, where consecutive numbers give exactly that), and counts by expiry kept on write
(bounded by the seconds a sweep spans rather than the links, but a second write on every
link's creation, revoke and new expiry that a crash between would leave disagreeing with the
file's `live` count): docs/performance-records.md, *Links expiring together*.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

SHARDS = 32
SHARDED_ABOVE = 2_000  # link records: one range of them reads in about 30 ms at most
FLAG = "linkShards"  # on a file record: every link of it carries `shard`
# What `sharded` reads of a file's record, besides what its caller reads.
FIELDS = {FLAG: 1, "linkTotal": 1}
SHARD_BATCH = 10_000  # documents a shard's read returns in its first batch


def shard_of(seq: int) -> int:
    """The shard of a file's link numbered `seq`."""
    return seq % SHARDS


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
        # In one batch: the database builds the answer whole before the first batch anyway,
        # and a second (past 101 documents) would be a round trip for nothing.
        found += [dict(link) async for link in links.find({**query, "shard": shard}, projection)
                  .batch_size(SHARD_BATCH)]
    return found

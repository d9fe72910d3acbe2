"""A whole collection in bounded batches, for bulk work (backup, storage tools, key rotation).

The embedded SecantusDB does not push `limit` down, and its `_id` index is virtual (it serves
equality only): `find({_id: {$gt: last}}).sort(_id).limit(n)` visits everything after `last`,
so a walk by `_id > last` costs the square of the collection, and counting a range costs as
much as reading it. A *closed* range on an index led by `_id` (`(_id, state)` on files, ...)
is bounded: it reads what it returns. So the walk steps through the key space of vaultd's ids
(a fixed prefix, then hexadecimal digits: UUIDs, `msg_<hex>` ...) in closed windows, each sized
from the density seen so far, as `services.common.newest` steps through time: after an empty window
one eight times wider, after a full one a width aimed at `size` documents. Random hex ids are
evenly spread, so every window stays near `size`.

The windows partition the strings exactly (their bounds are strings compared as the database
compares them), whatever the ids look like; only the cost depends on the shape. Ids outside it
are read in two guard ranges around it (one read each, so a collection of such ids is read in
one query), numbers and ObjectIds in one range each (vaultd writes neither: a document inserted
without `_id` gets an ObjectId). Ids of other types are not read: vaultd writes none.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar

from bson import ObjectId
from pymongo.asynchronous.collection import AsyncCollection

BATCH = 200  # documents a window aims at: each read well under 50 ms on the embedded database
DIGITS = 12  # hexadecimal digits of an id that place it in the key space
SPACE = 16**DIGITS
FIRST_WIDTH = SPACE >> 16
GROWTH = 8

Doc = TypeVar("Doc", bound=Mapping[str, Any])


def bound(prefix: str, at: int) -> str:
    """The id at position `at` of the key space: strictly increasing with `at`."""
    return f"{prefix}{at:0{DIGITS}x}"


def windows_around(prefix: str) -> tuple[dict[str, Any], ...]:
    """The ranges of `_id` outside `prefix` + hex digits: strings before and after them, then
    what sorts before strings and what sorts after them."""
    return ({"$gte": "", "$lt": bound(prefix, 0)}, {"$gte": prefix + "g"},
            {"$gte": -math.inf, "$lte": math.inf},
            {"$gte": ObjectId(b"\x00" * 12), "$lte": ObjectId(b"\xff" * 12)})


async def batches(collection: AsyncCollection[Doc], projection: Mapping[str, Any] | None = None,
                  *, query: Mapping[str, Any] | None = None, prefix: str = "",
                  size: int = BATCH) -> AsyncIterator[list[Doc]]:
    """Every document of `collection` (matching the equalities of `query`), in `_id` order, as
    lists of about `size` (never empty). `collection` needs an index of `query`'s fields then
    `_id` (`db_indexes.ensure_indexes`); `prefix` is what its ids start with before their hex
    digits. Yields to the event loop after every read."""
    low_guard, high_guard, *others = windows_around(prefix)
    read = functools.partial(_read, collection, dict(query or {}), projection)
    found = await read(low_guard)
    if found:
        yield found
    lower, width = 0, FIRST_WIDTH
    while lower < SPACE:
        upper = min(lower + width, SPACE)
        window = {"$gte": bound(prefix, lower),
                  "$lt": bound(prefix, upper) if upper < SPACE else prefix + "g"}
        found = await read(window)
        if found:
            yield found
        width = _next_width(width, len(found), size)
        lower = upper
    for window in (high_guard, *others):
        found = await read(window)
        if found:
            yield found


async def _read(collection: AsyncCollection[Doc], query: dict[str, Any],
                projection: Mapping[str, Any] | None, window: dict[str, Any]) -> list[Doc]:
    found = await collection.find({**query, "_id": window}, projection).to_list()
    await asyncio.sleep(0)  # other requests of this process run between two reads
    return sorted(found, key=_id_order)


def _id_order(doc: Mapping[str, Any]) -> str:
    return str(doc["_id"])


def _next_width(width: int, found: int, size: int) -> int:
    """Eight times wider after an empty window; otherwise aimed at `size` with the density
    seen, changing at most eightfold."""
    if found == 0:
        return width * GROWTH
    return max(width // GROWTH, min(width * size // found, width * GROWTH), 1)

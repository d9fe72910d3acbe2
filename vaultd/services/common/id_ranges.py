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

A collection whose ids name their kind first (`number_counters`: `access_log:file:<uuid>`,
`sessions:<address>` ...) is walked as several key spaces (`KeySpace`), one per kind: each its
prefix, then characters of its alphabet (hexadecimal digits, or those of an address), stepped
through as above; the strings between two spaces, before the first and after the last are read
in one range each, as the guards of one. Within one space the ids must be spread evenly enough
for a window's density to predict the next one's: the alphabet is the characters they use.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from bson import ObjectId
from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import HEX  # the alphabet of most ids' digits, declared with the walks

BATCH = 200  # documents a window aims at: each read well under 50 ms on the embedded database
DIGITS = 12  # characters of an id (after its prefix) that place it in the key space
GROWTH = 8

Doc = TypeVar("Doc", bound=Mapping[str, Any])


def bound(prefix: str, at: int) -> str:
    """The id at position `at` of the key space: strictly increasing with `at`."""
    return f"{prefix}{at:0{DIGITS}x}"


@dataclass(frozen=True)
class KeySpace:
    """The ids `prefix` + characters of `alphabet` (in code point order): positions 0 to
    `size`, each `DIGITS` characters of it, strictly increasing; `end` sorts after them all."""

    prefix: str = ""
    alphabet: str = HEX

    def __post_init__(self) -> None:
        if list(self.alphabet) != sorted(set(self.alphabet)) or len(self.alphabet) < 2:
            raise ValueError(f"alphabet {self.alphabet!r}: distinct characters, in order")

    @property
    def size(self) -> int:
        return int(len(self.alphabet) ** DIGITS)

    @property
    def first_width(self) -> int:
        return self.size // len(self.alphabet) ** 4  # in hexadecimal, 16^8 of 16^12

    @property
    def end(self) -> str:
        return self.prefix + chr(ord(self.alphabet[-1]) + 1)

    def bound(self, at: int) -> str:
        if self.alphabet == HEX:
            return bound(self.prefix, at)
        digits = []
        for _ in range(DIGITS):
            at, digit = divmod(at, len(self.alphabet))
            digits.append(self.alphabet[digit])
        return self.prefix + "".join(reversed(digits))


def windows_around(prefix: str) -> tuple[dict[str, Any], ...]:
    """The ranges of `_id` outside `prefix` + hex digits: strings before and after them, then
    what sorts before strings and what sorts after them."""
    return ({"$gte": "", "$lt": bound(prefix, 0)}, {"$gte": prefix + "g"},
            {"$gte": -math.inf, "$lte": math.inf},
            {"$gte": ObjectId(b"\x00" * 12), "$lte": ObjectId(b"\xff" * 12)})


async def batches(collection: AsyncCollection[Doc], projection: Mapping[str, Any] | None = None,
                  *, query: Mapping[str, Any] | None = None, prefix: str = "",
                  size: int | None = None, spaces: Sequence[KeySpace] = ()
                  ) -> AsyncIterator[list[Doc]]:
    """Every document of `collection` (matching the equalities of `query`), in `_id` order, as
    lists of about `size` (never empty; None: BATCH, read at the call). `collection` needs an
    index of `query`'s fields then `_id` (`db_indexes.ensure_indexes`); `prefix` is what its ids
    start with before their hex digits, or `spaces` the key spaces of its ids' kinds (in order,
    none overlapping another). Yields to the event loop after every read."""
    if size is None:
        size = BATCH
    spaces = tuple(spaces) or (KeySpace(prefix),)
    for before, after in itertools.pairwise(spaces):
        if after.bound(0) < before.end:
            raise ValueError(f"key spaces {before.prefix!r} and {after.prefix!r} overlap")
    read = functools.partial(_read, collection, dict(query or {}), projection)
    below = ""
    for space in spaces:
        found = await read({"$gte": below, "$lt": space.bound(0)})
        if found:
            yield found
        async for found in _space(read, space, size):
            yield found
        below = space.end
    _, _, *others = windows_around(prefix)
    for window in ({"$gte": below}, *others):
        found = await read(window)
        if found:
            yield found


async def _space(read: Callable[[dict[str, Any]], Awaitable[list[Doc]]], space: KeySpace,
                 size: int) -> AsyncIterator[list[Doc]]:
    """The documents of one key space, window by window."""
    lower, width = 0, space.first_width
    while lower < space.size:
        upper = min(lower + width, space.size)
        window = {"$gte": space.bound(lower),
                  "$lt": space.bound(upper) if upper < space.size else space.end}
        found = await read(window)
        if found:
            yield found
        width = _next_width(width, len(found), size)
        lower = upper


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

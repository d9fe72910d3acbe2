"""Newest-first reads by a dense number per scope: the cost is the count returned, whatever the
records' times.

`services.common.newest` steps back through time, and the embedded SecantusDB reads a whole
window before it limits: a window that reaches a burst (an import of 10^5 files in a minute,
after a quiet month) reads all of it. A number given in the write that already updates the
scope's counter (an upload raises the account's usage, `quota.reserve_upload`) has no bursts:
the range `[top - n + 1, top]` of an index on (scope, number) holds at most n records, however
they arrived. So the newest `count` are read range by range from the scope's last number down:

- a range holds at most as many records as it is wide, so what is read never exceeds what is
  asked by more than the last range's excess;
- gaps (deleted records, abandoned uploads) make a range come back short: the next one is
  widened for the density seen so far (at most GROWTH times the last one), so a scope with most
  of its records deleted costs a few round trips more, not a read of what is gone;
- a range is never widened past what would hold MAX_READ records at that density, so that no
  single read of a deep page is one long database operation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.cursor import AsyncCursor

from vaultd.services.common.newest import newest

GROWTH = 8  # a range that came back short is followed by one at most this many times wider
AIM = 1.1  # the next range aims at a tenth more than the density seen predicts
MAX_READ = 200  # records one range is expected to hold, as `id_ranges.BATCH` (a read of 550
# files took up to 229 ms on the loaded 2-core machine: docs/performance.md)
# The first range also holds the record past a page of MAX_READ, which tells the reader whether
# another page follows or ties the page's last millisecond (an access log's page of 200): a
# range of 200 left that one record to a second round trip.
FIRST_RANGE = MAX_READ + 1

NUMBERING_WINDOW = 200  # records read per step of `number_unnumbered`, newest first
NUMBERING_BATCH = 20  # updates per command: the records carry several indexes
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)  # nothing vaultd wrote is older

Doc = TypeVar("Doc", bound=Any)


async def newest_numbered(collection: AsyncCollection[Doc], query: dict[str, Any], field: str,
                          *, count: int, top: int, floor: int,
                          keep: Callable[[Doc], bool] | None = None,
                          empty: Sequence[tuple[int, int]] = ()) -> list[Doc]:
    """Up to `count` documents matching `query`, highest `field` first, from `top` down to
    `floor` (both inclusive). `collection` needs an index of `query`'s equalities then `field`;
    numbers are unique within the scope `query` names among the documents `keep` keeps (a
    filter applied here: a field outside the index would make SecantusDB scan).

    `empty`: stretches of numbers (lowest, highest), highest first and apart, known to hold no
    match (`files.file_gaps`). A range reaches past them: its width and the density counted
    are of the other numbers, so a range that crosses thousands of known-empty numbers is no
    wider where the matches are than one that crosses none."""
    found: list[Doc] = []
    upper, width, spanned = top, max(min(count, FIRST_RANGE), 1), 0
    while len(found) < count and upper >= floor:
        lower = max(_reach(upper, width, empty), floor)
        ranged = {**query, field: {"$gte": lower, "$lte": upper}}
        holds = _outside(lower, upper, empty)
        docs = await in_one_batch(collection.find(ranged), holds)
        docs.sort(key=lambda doc: doc[field], reverse=True)
        found += docs if keep is None else [doc for doc in docs if keep(doc)]
        spanned += holds
        width = _next_width(width, len(found), spanned, count - len(found))
        upper = lower - 1
    return found[:count]


def _reach(upper: int, width: int, empty: Sequence[tuple[int, int]]) -> int:
    """The lowest number of a range from `upper` down that holds `width` numbers outside
    `empty`."""
    cursor, remaining = upper, width
    for bottom, highest in empty:
        if bottom > cursor:
            continue
        available = cursor - min(highest, cursor)
        if available >= remaining:
            break
        remaining -= available
        cursor = bottom - 1
    return cursor - remaining + 1


def _outside(lower: int, upper: int, empty: Sequence[tuple[int, int]]) -> int:
    """The numbers from `lower` to `upper` outside `empty`."""
    inside = sum(max(min(highest, upper) - max(bottom, lower) + 1, 0)
                 for bottom, highest in empty)
    return upper - lower + 1 - inside


async def in_one_batch(cursor: AsyncCursor[Doc], most: int) -> list[Doc]:
    """A range's documents in one round trip where they are at most `most` (a range of numbers
    holds at most as many as it is wide): the server's first batch is otherwise 101 documents,
    and an access log's page of 200 cost a `getMore` more. One more than `most`: a first batch
    exactly full leaves SecantusDB's cursor open, and the driver asks a `getMore` for nothing."""
    return await cursor.batch_size(max(most, 0) + 1).to_list()


def _next_width(width: int, found: int, spanned: int, wanted: int) -> int:
    """A range aimed at `wanted` more records at the density seen over the `spanned` numbers
    read so far, between `wanted` (no record deleted) and GROWTH times the last range."""
    if wanted <= 0:
        return width
    density = found / spanned if found else 1 / (width * GROWTH)
    aimed = math.ceil(min(wanted, MAX_READ) / density * AIM)
    return max(min(aimed, width * GROWTH), min(wanted, MAX_READ), 1)


async def number_unnumbered(collection: AsyncCollection[Any], query: dict[str, Any],
                            time_field: str, field: str) -> int | None:
    """Numbers the records of `query` that have no `field` yet, newest first from 0 down (-1,
    -2...: below the first number a counter gives, which starts at 1), by `time_field` then
    `_id`; the lowest given, None if none was. Read in time windows, one millisecond's ties at
    a time at a window's edge, written NUMBERING_BATCH per command: no step holds the database
    long. Records already numbered keep their numbers and are counted past."""
    upper: datetime | None = None
    given = 0
    while True:
        docs = (await newest(collection, query, time_field, count=NUMBERING_WINDOW,
                             before=upper, oldest=EPOCH, fields=(field,))).docs
        if not docs:
            return 1 - given if given else None
        edge = docs[-1][time_field]
        # The rest of the edge's millisecond (ties), before the next window starts below it.
        tied = await collection.find({**query, time_field: edge},
                                     {field: 1, time_field: 1}).to_list()
        docs = [doc for doc in docs if doc[time_field] != edge]
        docs += sorted(tied, key=lambda doc: doc["_id"], reverse=True)
        updates = [UpdateOne({"_id": doc["_id"]}, {"$set": {field: -(given + place)}})
                   for place, doc in enumerate(doc for doc in docs if field not in doc)]
        for first in range(0, len(updates), NUMBERING_BATCH):
            await collection.bulk_write(updates[first:first + NUMBERING_BATCH], ordered=False)
        given += len(updates)
        upper = edge

"""Deleting many records in short operations, so one bulk job does not hold the embedded
database's single lock for long while every other request waits.

What a delete costs is mostly its index entries: a link carries ten indexes, and a delete of
100 links took up to 62 ms on the 2-core machine (`python -m bench.bulk_steps`), one of 20
about 12 ms. So every delete removes at most DELETE_BATCH records by `_id`, and the ids are
read in bounded steps: `_id` windows (`id_ranges`, their ids passed to `delete_ids`) or time
windows (`delete_older`).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.services.common.newest import FIRST_WINDOW, newest

DELETE_BATCH = 20  # records per delete (by `_id`): about 12 ms for links, the costliest
WINDOW = 100  # records one read of ids aims at (`delete_older`, a deletion's `_id` windows)
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)  # before anything vaultd wrote: where `delete_older` stops


async def delete_ids(records: AsyncCollection[Any], ids: list[Any]) -> int:
    """Delete these records, DELETE_BATCH per operation, yielding between them."""
    deleted = 0
    for first in range(0, len(ids), DELETE_BATCH):
        result = await records.delete_many({"_id": {"$in": ids[first:first + DELETE_BATCH]}})
        deleted += int(result.deleted_count)
        await asyncio.sleep(0)
    return deleted


async def delete_older(records: AsyncCollection[Any], query: dict[str, Any], field: str,
                       cutoff: datetime) -> int:
    """Delete what the equalities of `query` match with `field` before `cutoff`, WINDOW records
    per read, newest first (time windows on an index of `query`'s fields then `field`:
    `services.common.newest`), however many there are: retention after a long pause reads
    in steps too. Each read starts where the last one ended (its last record's millisecond
    again, for ties), with a first window as long as the last read's span. Returns how many
    were deleted."""
    deleted, upper, window = 0, cutoff, FIRST_WINDOW
    while True:
        docs = (await newest(records, query, field, count=WINDOW, before=upper, oldest=EPOCH,
                             first_window=window)).docs
        gone = await delete_ids(records, [doc["_id"] for doc in docs])
        deleted += gone
        if not gone:  # none left (or another process took them first)
            return deleted
        last = docs[-1][field]
        window = max(upper - last, FIRST_WINDOW)
        upper = last + timedelta(milliseconds=1)

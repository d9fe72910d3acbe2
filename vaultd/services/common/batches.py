"""Deleting many records in short operations, so one bulk job does not hold the embedded
database's single lock for seconds while every other request waits."""

from __future__ import annotations

import asyncio
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.services.common import id_ranges

DELETE_BATCH = 500  # records per delete: each well under 50 ms on the embedded database
WINDOW = 100  # records a window of `delete_in_windows` aims at (read, then deleted by `_id`)


async def delete_in_batches(records: AsyncCollection[Any], query: dict[str, Any]) -> int:
    """Delete what `query` matches, DELETE_BATCH records per operation, yielding between them.
    The ids are read once (`query` should be an index range); each delete is by `_id` alone.
    Returns how many were deleted."""
    ids = [doc["_id"] async for doc in records.find(query, {"_id": 1})]
    deleted = 0
    for first in range(0, len(ids), DELETE_BATCH):
        result = await records.delete_many({"_id": {"$in": ids[first:first + DELETE_BATCH]}})
        deleted += int(result.deleted_count)
        await asyncio.sleep(0)
    return deleted


async def delete_in_windows(records: AsyncCollection[Any], query: dict[str, Any]) -> int:
    """Delete what the equalities of `query` match without reading all their ids at once: they
    are read window by window on an index of `query`'s fields then `_id` (`id_ranges`), each
    window's deleted by `_id`. Returns how many were deleted."""
    deleted = 0
    async for batch in id_ranges.batches(records, {"_id": 1}, query=query, size=WINDOW):
        result = await records.delete_many({"_id": {"$in": [doc["_id"] for doc in batch]}})
        deleted += int(result.deleted_count)
    return deleted

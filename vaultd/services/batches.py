"""Deleting many records in short operations, so one bulk job does not hold the embedded
database's single lock for seconds while every other request waits."""

from __future__ import annotations

import asyncio
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

DELETE_BATCH = 500  # records per delete: each well under 50 ms on the embedded database


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

"""Newest-first reads that cost what they return, on a database that does not push `limit` down.

The embedded SecantusDB collects every document an index range matches, then sorts and limits
in Python: `find({fileId}).sort(at).limit(200)` reads the whole log of the file. A range on the
index's time field is bounded, so the newest documents are read window by window, stepping back
in time, each window sized from the density seen so far, until enough are found or the oldest
possible time is passed. On MongoDB the same range queries use the index with the limit.

Cost: what is returned plus the overshoot of the last window (about half a window's documents
at a steady rate), plus one round trip per window (a log-scale count of them: windows grow
eightfold while they come back empty).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypeVar

from pymongo.asynchronous.collection import AsyncCollection

FIRST_WINDOW = timedelta(seconds=1)
GROWTH = 8  # an empty window is followed by one this many times longer
ORDER = [("_id", -1)]

Doc = TypeVar("Doc", bound=Any)


async def newest(
    collection: AsyncCollection[Doc],
    query: dict[str, Any],
    field: str,
    *,
    count: int,
    oldest: datetime,
    before: datetime | None = None,
    latest: datetime | None = None,
    first_window: timedelta = FIRST_WINDOW,
) -> list[Doc]:
    """Up to `count` documents matching `query`, newest `field` first (ties by `_id`, newest
    first), from `before` (exclusive; None: no upper bound) back to `oldest` (inclusive).

    `latest` is the time the newest document can have (now, for documents stamped by now):
    the first window ends there; `first_window`, when the caller knows the density, saves the
    round trips of growing to it."""
    found: list[Doc] = []
    upper, window = before, max(first_window, FIRST_WINDOW)
    top = before or latest
    while len(found) < count and (upper is None or upper > oldest):
        edge = (upper or top or oldest) - window
        lower = max(edge, oldest)
        bounds: dict[str, Any] = {"$gte": lower}
        if upper is not None:
            bounds["$lt"] = upper
        order = [(field, -1), *ORDER]
        cursor = collection.find({**query, field: bounds}).sort(order).limit(count - len(found))
        page = [doc async for doc in cursor]
        found += page
        window = _next_window(window, len(page), len(found), count, top, lower)
        upper = lower
    return found


def _next_window(window: timedelta, last: int, found: int, count: int,
                 top: datetime | None, lower: datetime) -> timedelta:
    """Grow fourfold after an empty window; otherwise aim at the rest with the density seen."""
    if last == 0 or top is None or found == 0:
        return window * GROWTH
    span = max((top - lower).total_seconds(), 0.001)
    wanted = timedelta(seconds=span * (count - found) / found * 1.5)
    return max(min(wanted, window * GROWTH), FIRST_WINDOW)

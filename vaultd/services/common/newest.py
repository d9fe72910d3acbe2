"""Newest-first reads that cost what they return, on a database that does not push `limit` down.

The embedded SecantusDB collects every document an index range matches, then sorts and limits
in Python: `find({fileId}).sort(at).limit(200)` reads the whole log of the file. A range on the
index's time field is bounded, so the newest documents are read window by window, stepping back
in time, each window sized from the density seen so far, until enough are found or the oldest
possible time is passed. On MongoDB the same range queries use the index with the limit.

Cost: what is returned plus the overshoot of the last window (about a fifth of what it was
asked for, at a steady rate), plus one round trip per window (a log-scale count of them: windows
grow eightfold while they come back empty).

`newest` also hands back the document that follows the last one returned, when the last
window held it: a caller that pages by an exclusive time bound needs to know whether that
document shares the last one's time (and must then be read with it) without a query of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from pymongo.asynchronous.collection import AsyncCollection

FIRST_WINDOW = timedelta(seconds=1)
GROWTH = 8  # an empty window is followed by one this many times longer
ORDER = [("_id", -1)]
# The last window aims at this many times the documents still wanted: each one read past the
# limit costs about 30 us on SecantusDB, a window that falls short a round trip (about 0.5 ms).
AIM = 1.2
SPILL, SPILL_FLOOR = 4, 256  # a window holding more than max(SPILL x wanted, FLOOR) is re-read

Doc = TypeVar("Doc", bound=Any)


@dataclass
class NewestPage(Generic[Doc]):
    docs: list[Doc]
    following: Doc | None  # the next document in the order, if the last window held it


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
    fields: tuple[str, ...] | None = None,
) -> NewestPage[Doc]:
    """Up to `count` documents matching `query`, newest `field` first (ties by `_id`, newest
    first), from `before` (exclusive; None: no upper bound) back to `oldest` (inclusive), and
    the document after the last one when the last window read it.

    `latest` is the time the newest document can have (now, for documents stamped by now):
    the first window ends there; `first_window`, when the caller knows the density, saves the
    round trips of growing to it. `fields`: only these come back (with `_id` and `field`), for a
    caller that reads many documents for one value each."""
    found: list[Doc] = []
    following: Doc | None = None
    upper, window = before, max(first_window, FIRST_WINDOW)
    top = before or latest
    while len(found) < count and (upper is None or upper > oldest):
        edge = (upper or top or oldest) - window
        lower = max(edge, oldest)
        bounds: dict[str, Any] = {"$gte": lower}
        if upper is not None:
            bounds["$lt"] = upper
        wanted = count - len(found)
        page = await _window(collection, {**query, field: bounds}, field, wanted,
                             None if fields is None else {name: 1 for name in (*fields, field)})
        if len(page) > wanted:
            following, page = page[wanted], page[:wanted]
        found += page
        window = _next_window(window, len(page), found, count, field, lower)
        upper = lower
    return NewestPage(found, following)


async def _window(collection: AsyncCollection[Doc], query: dict[str, Any], field: str,
                  wanted: int, projection: dict[str, int] | None = None) -> list[Doc]:
    """A window's documents in the order, at least `wanted + 1` of them when it holds them (the
    one past the wanted tells a caller what follows).

    The database reads the whole window whatever the limit (SecantusDB pushes none down), so
    the window comes back unsorted and is ordered here: SecantusDB's sort of the same documents
    costs about a quarter of the query (1.4 of 5.6 ms for 200). A window holding more than
    SPILL times the wanted, and SPILL_FLOOR (a burst the density did not foresee), is read
    again, sorted and limited by the database, so what crosses the wire stays bounded."""
    cap = max(SPILL * (wanted + 1), SPILL_FLOOR)
    docs = await collection.find(query, projection).limit(cap).batch_size(cap).to_list()
    if len(docs) < cap:
        docs.sort(key=lambda doc: (doc[field], doc["_id"]), reverse=True)
        return docs
    return await (collection.find(query, projection).sort([(field, -1), *ORDER])
                  .limit(wanted + 1).batch_size(wanted + 1).to_list())


def _next_window(window: timedelta, last: int, found: list[Any], count: int, field: str,
                 lower: datetime) -> timedelta:
    """Grow eightfold after an empty window; otherwise aim at the rest with the density seen
    between the newest document found and the last window's start (not from the top: a log
    quiet lately would read as sparse, and the next window overshoot)."""
    if last == 0 or not found:
        return window * GROWTH
    span = max((found[0][field] - lower).total_seconds(), 0.001)
    wanted = timedelta(seconds=span * (count - len(found)) / len(found) * AIM)
    return max(min(wanted, window * GROWTH), FIRST_WINDOW)

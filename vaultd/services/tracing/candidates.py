"""Which page views a placement trace scores, and in what order (docs/leak-tracing.md, "A year
of views"): reads that cost what they return.

- `page_views`: one page's views of the last YEAR, newest first, CHUNK at a time, by an index
  range on the page (`access_log (accountId, fileId, page, -at)`, page entries only): a
  chunk is read when the one before named nobody, so a trace of a recent view reads one chunk.
  A `window` reads one day's (`services.tracing.days`: the day the leak's pattern prints).
- `newest_views`: the account's NEWEST page views whatever the page, the candidates of a leak
  whose page has no print (a page served before the prints, and not since).

`threshold` is the standing a view must reach among `count` candidates: the more views scored,
the higher, so that a trace that scores many views names a wrong one no more often than one
that scores NEWEST.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

from vaultd.db import Db
from vaultd.services.common.batches import EPOCH
from vaultd.services.common.newest import FIRST_WINDOW, newest
from vaultd.timefmt import utcnow

YEAR = timedelta(days=365)
CHUNK = 5000  # views scored in one worker task (about 0.025 s of its CPU)
NEWEST = 5000  # the account's newest views, scored when the page is not known
_TIE = timedelta(milliseconds=1)  # the log's times are milliseconds: a chunk re-reads its last


async def page_views(db: Db, account_id: str, file_id: str, page: int,
                     now: datetime | None = None,
                     window: tuple[datetime, datetime] | None = None
                     ) -> AsyncIterator[list[int]]:
    """The render ids of the page's views of the last YEAR (or of `window`: from its first
    time, inclusive, to its second, exclusive), newest first, CHUNK at a time (one view whose
    time it shares with the chunk before may come again: callers skip what they scored)."""
    latest = now or utcnow()
    oldest, before, first = latest - YEAR, None, FIRST_WINDOW
    if window is not None:  # a day: read whole in one query unless it holds a burst
        (oldest, latest), before = window, window[1]
        first = latest - oldest
    query = {"accountId": account_id, "fileId": file_id, "page": page, "action": "page"}
    while True:
        found = await newest(db.access_log, query, "at", count=CHUNK, oldest=oldest,
                             before=before, latest=latest, first_window=first,
                             fields=("renderId",))
        ids = [int(entry["renderId"], 16) for entry in found.docs if "renderId" in entry]
        if ids:
            yield ids
        if len(found.docs) < CHUNK:
            return
        before = found.docs[-1]["at"] + _TIE


async def newest_views(db: Db, account_id: str) -> list[int]:
    """The render ids of the account's NEWEST page views, newest first."""
    found = await newest(db.access_log, {"accountId": account_id, "action": "page"}, "at",
                         count=NEWEST, oldest=EPOCH, latest=utcnow(), fields=("renderId",))
    return [int(entry["renderId"], 16) for entry in found.docs if "renderId" in entry]


def threshold(count: int, base: float) -> float:
    """The standing a view must reach to be named among `count` candidates: `base` for NEWEST
    or fewer; for more, the level a normal tail passes as often in `count` as `base` does in
    NEWEST (the wrong views' standings are near normal: docs/leak-tracing.md)."""
    if count <= NEWEST:
        return base
    tail = _upper_tail(base) * NEWEST / count
    low, high = base, base + 4.0
    for _ in range(40):  # bisection: the tail falls as the level rises
        middle = (low + high) / 2
        low, high = (middle, high) if _upper_tail(middle) > tail else (low, middle)
    return high


def _upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))

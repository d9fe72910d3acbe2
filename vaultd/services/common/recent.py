"""Records read recently, kept briefly per process for the page path.

A page needs its link, its file's record and its account's. Whether the link is live is read
from the database on every request: that is what a revoke, an expiry or a deletion changes. The
rest may be reused for `TTL_SECONDS`, so that the render of a page of a document being read can
start before any database round trip, and that is harmless because:

- a link's other fields (its file, account, viewer, expiry) never change;

- a stored file's record does not change, except
  - its wrapped data key, re-wrapped by a master-key rotation: the old master key stays in the
    ring for longer than an entry lives (`rewrap.DROP_GRACE_SECONDS`), so a kept record still
    unwraps;
  - its state when the file is deleted: deletion removes the file's links first, and the link
    is read afresh, so no page of a deleted file is served from a kept record;
- an account's plan and branding change rarely (`vault-admin`, the console's branding form): a
  new branding reaches the watermark within `TTL_SECONDS`.

Nothing else uses these entries: the files API and the account endpoint read afresh.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

TTL_SECONDS = 1.0
CAPACITY = 512

T = TypeVar("T")


class RecentRecords(Generic[T]):
    """At most `capacity` records by id, each usable for `ttl` seconds after it was read."""

    def __init__(self, ttl: float = TTL_SECONDS, capacity: int = CAPACITY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, T]] = OrderedDict()

    def fresh(self, record_id: str) -> T | None:
        """The record kept under `record_id` less than `ttl` seconds ago, else None."""
        kept = self._entries.get(record_id)
        if kept is None or self._clock() - kept[0] >= self.ttl:
            return None
        return kept[1]

    def forget(self, record_id: str) -> None:
        self._entries.pop(record_id, None)

    def keep(self, record_id: str, record: T) -> None:
        """Remember a record just read from the database."""
        self._entries[record_id] = (self._clock(), record)
        self._entries.move_to_end(record_id)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

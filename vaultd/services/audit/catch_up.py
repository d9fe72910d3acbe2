"""The audit sequencer's catch-up: a long stretch of the log sequenced in reads of bounded size.

A round reads each source from its last look to its horizon (`sequencer`). Where that stretch
is not known to be small (a first round, over a log written before `audit.enabled` was on; a
sequencer back after an outage, its last look more than `CATCH_UP_AFTER` behind), one read of
it returns anything up to the whole log, and the embedded SecantusDB builds a find's whole
answer before its first batch, holding its one lock meanwhile: 10^6 entries held it for
minutes. Neither `limit` nor a sort is pushed down, so finding the oldest entry or counting a
window costs what reading it costs; a closed range on the `at` index reads only what it
returns. So the round that finds such a stretch, once its fence stands at its horizon (no entry
stamped before it can land any more: `log_fence`):

1. plans (`plan`): walks each source in `_id` windows reading only `at` (`id_ranges.batches`:
   the ids are random hex, so each window holds about `WALK_BATCH` entries whatever their
   times), keeps the times in the stretch as one sorted array of milliseconds (NumPy int64,
   8 bytes an entry: 8 MB for 10^6), and cuts it into consecutive time windows of at most
   `READ_BATCH` entries of all sources together, between two distinct milliseconds (a single
   millisecond holding more goes whole);
2. reads the windows in order, in this round and the next, a closed range on `at` per source
   and window, `ROUND_CAP` entries a round at most (`Backlog.take`); they are sequenced as
   any round's, and the last look saved at the end of the last window read (`Backlog.looked`).

The round that reads the last windows then reads from the plan's horizon on, as any round
does: what arrived meanwhile (a first round over a small log sequences it all at once). Unless
the catch-up outlasted `CATCH_UP_AFTER` (`outrun`): what arrived meanwhile is then a long
stretch too, and the next round plans it, as it would after an outage, rather than read it
whole.
The plan lives in the lease holder's memory for its lease epoch: a take-over, a restart or a
failed round plans again from the saved cursors, and the entries of a plan made then (and of
the round after it) are looked up in the blocks before they are written (`Sequencer.unsure`),
as after any take-over. The walk renews the lease as it goes: a long one is not taken over.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from vaultd.db import Db
from vaultd.services.audit import lease
from vaultd.services.audit.tree_writes import LeaseLost
from vaultd.services.common import id_ranges

log = logging.getLogger("vaultd.audit")
# Entries a window holds at most (one millisecond holding more goes whole). SecantusDB's time
# for a read is about its answer's size, whatever the log holds: 0.1 ms an entry, so a window
# of 300 holds its one lock about 35 ms (`at` alone costs as much), under the 50 ms any other
# request may wait behind one operation. With windows of 2,000 the catch-up's operations
# reached p99 200 ms (`python -m bench.bulk_steps --catch-up-only`, docs/audit.md).
READ_BATCH = 300
WALK_BATCH = id_ranges.BATCH  # what a walk's `_id` window aims at (the bulk walks' size)
# Entries a catch-up round sequences at most: 20 reads, and the leaves' hashing between them in
# this process's event loop, then the merge delay's rest, in which other requests run.
ROUND_CAP = 6_000
# A stretch longer than this is caught up in windows. The rounds of a running sequencer are a
# merge delay apart (a minute at most), so this is an outage, a first round, or what arrived
# during a catch-up that took longer (`outrun`); a plan costs a walk of the whole log (about
# three minutes for 10^6 entries, in reads of `WALK_BATCH`), well within it, so a chain of plans
# shortens at each link.
CATCH_UP_AFTER = timedelta(minutes=10)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)


def outrun(backlog: Backlog, horizons: list[datetime]) -> bool:
    """Whether a round's source `horizons` lie more than `CATCH_UP_AFTER` past the plan's
    horizon: the catch-up took that long, and what arrived meanwhile is planned in its turn."""
    return any(horizon - backlog.horizon > CATCH_UP_AFTER for horizon in horizons)


def needed(stretches: list[tuple[datetime | None, datetime]]) -> bool:
    """Whether any (start, horizon) stretch of a round must be caught up: read whole from
    nowhere (None), or longer than `CATCH_UP_AFTER`."""
    return any(start is None or horizon - start > CATCH_UP_AFTER for start, horizon in stretches)


@dataclass
class Backlog:
    """A planned catch-up: window `i` is [`cuts[i]`, `cuts[i + 1]`), holding `counts[i]`
    entries of all sources; `cuts[-1]` is the plan's horizon. Each source is read from its
    own start on (`starts`: what it had read before; None, nothing)."""

    starts: dict[str, datetime | None]
    cuts: list[datetime]
    counts: list[int]
    next: int = 0  # the first window no round has sequenced
    taking: int = 0  # where the round under way ends (`advance` moves `next` there)

    @property
    def horizon(self) -> datetime:
        return self.cuts[-1]

    def used_up(self) -> bool:
        return self.next >= len(self.counts)

    def take(self, cap: int) -> list[tuple[datetime, datetime]]:
        """The windows of this round: from the first not sequenced, at least one, as many as
        hold `cap` entries together."""
        end, total = self.next, 0
        while end < len(self.counts) and (end == self.next or total + self.counts[end] <= cap):
            total += self.counts[end]
            end += 1
        self.taking = end
        return [(self.cuts[i], self.cuts[i + 1]) for i in range(self.next, end)]

    def finishing(self) -> bool:
        """Whether the round under way reads the last windows (and then what is newer)."""
        return self.taking >= len(self.counts)

    def advance(self) -> None:
        """The round's windows are sequenced and the cursors saved."""
        self.next = self.taking

    def queries(self, kind: str, windows: list[tuple[datetime, datetime]],
                ) -> list[dict[str, Any]]:
        """The closed ranges of `at` that read `windows` of source `kind`, one a window (none
        for a window wholly before the source's start: read before)."""
        start = self.starts.get(kind)
        bounded = [(lower if start is None else max(lower, start), upper)
                   for lower, upper in windows]
        return [{"at": {"$gte": lower, "$lt": upper}} for lower, upper in bounded if lower < upper]

    def looked(self, kind: str) -> datetime:
        """How far source `kind` is read once the round's windows are: its cursors' value."""
        reached = self.cuts[self.taking] if self.taking < len(self.counts) else self.horizon
        start = self.starts.get(kind)
        return reached if start is None else max(start, reached)


@dataclass(frozen=True)
class Renewal:
    """The lease a plan's walk holds: renewed a third of `seconds` at a time."""

    holder: str
    epoch: int
    seconds: float

    async def renew(self, db: Db) -> None:
        held = await lease.take(db, self.holder, self.seconds)
        if held is None or held["epoch"] != self.epoch:
            raise LeaseLost("the audit sequencer's lease, while planning a catch-up")


async def plan(db: Db, sources: list[tuple[str, str, datetime | None]], horizon: datetime,
               renewal: Renewal) -> Backlog:
    """The catch-up of the (kind, collection, start) sources up to `horizon`, every entry
    stamped before it having landed (the fence stands there)."""
    upper = _ms_after(horizon)
    found: list[np.ndarray[Any, np.dtype[np.int64]]] = []
    began = renewed = time.monotonic()
    for _, collection, start in sources:
        lower = _ms_after(start) if start is not None else None
        async for batch in id_ranges.batches(db.raw(collection), {"at": 1}, size=WALK_BATCH):
            times = np.fromiter((_ms(doc["at"]) for doc in batch
                                 if isinstance(doc.get("at"), datetime)), np.int64)
            inside = (times < upper) if lower is None else ((times >= lower) & (times < upper))
            found.append(times[inside])
            if time.monotonic() - renewed > renewal.seconds / 3:
                await renewal.renew(db)
                renewed = time.monotonic()
    stamps = np.sort(np.concatenate(found)) if found else np.zeros(0, np.int64)
    bounds, counts = cut(stamps, READ_BATCH)
    cuts = [EPOCH + MS * int(ms) for ms in bounds] + [horizon]
    log.info("audit catch-up planned: %d entries before %s in %d windows (walked in %.1f s)",
             len(stamps), horizon.isoformat(), len(counts), time.monotonic() - began)
    return Backlog({kind: start for kind, _, start in sources}, cuts, counts)


def cut(stamps: np.ndarray[Any, np.dtype[np.int64]], size: int) -> tuple[list[int], list[int]]:
    """Sorted milliseconds cut into consecutive windows of at most `size` (one millisecond
    holding more whole): each window's first millisecond, and how many it holds."""
    bounds: list[int] = []
    counts: list[int] = []
    first, total = 0, len(stamps)
    while first < total:
        end = min(first + size, total)
        if end < total and stamps[end] == stamps[end - 1]:  # cut before that millisecond
            end = int(np.searchsorted(stamps, stamps[end], side="left"))
            if end <= first:  # it alone holds more: it goes whole
                end = int(np.searchsorted(stamps, stamps[first], side="right"))
        bounds.append(int(stamps[first]))
        counts.append(end - first)
        first = end
    return bounds, counts


def _ms(at: datetime) -> int:
    return ((at if at.tzinfo else at.replace(tzinfo=UTC)) - EPOCH) // MS


def _ms_after(moment: datetime) -> int:
    """The first whole millisecond at or after `moment` (the database keeps milliseconds)."""
    return -((EPOCH - moment) // MS)

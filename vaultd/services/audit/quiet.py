"""Quiet rounds: an idle sequencer asks the database one question a source, not eleven.

A full round (`sequencer`) sends about eleven commands whether anything arrived or not: the
lease read and renewed, the fences' horizons, a fence raised per source, a read per source,
the cursors saved, the numbering's record and its horizon moved. At the default merge delay
that is eleven commands a second from every idle vaultd holding the lease, about 0.7 % of a
core in vaultd and as much in the embedded database (measured in docs/audit.md, *Quiet
rounds*). Once a full round has left nothing behind it, the rounds after it only look for an
entry stamped at or after where its look ended, in each source; the first that finds one runs
the full round at once, so an entry is sequenced as soon as before.

Why one look is enough: a look reads what the full round would read first, every entry
stamped at or after the newest it has read (its cursor; behind the horizon, where its look
ended), and finds nothing it has not sequenced (`seen`) unless something new landed. What
vaultd writes carries the fence's mark and cannot land stamped behind the horizon
(`log_fence`); an unmarked entry a tool writes further back than the cursor is not read by a
full round either.

A round is quiet only when the last full round:
- finished its work: no catch-up under way, nothing to look up again (`dirty`, `unsure`),
  every source fenced, and the access log's numbering settled (the older entries' walk done);
- read no entry at or after its horizon (those are read again, and numbered, by a later full
  round: the first `audit.late_arrival_seconds` after the last entry are full rounds);
- ran less than `FULL_EVERY` ago: the horizons, the fences and the numbering move on at least
  that often, so that a stretch never grows long enough to be caught up by windows
  (`catch_up.CATCH_UP_AFTER`) and the numbering's horizon trails the clock by at most that;
and the lease is still this holder's: its `until` is more than half a lease away, or a renewal
keeps the same epoch (nobody else can take it before `until`).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from vaultd.db import Db
from vaultd.records.audit import SourceKind
from vaultd.services.audit import lease, leaves
from vaultd.timefmt import utcnow

FULL_EVERY = timedelta(seconds=60)


class Numbering(Protocol):
    """The access log's numbering, run by each full round behind its fence
    (`older_log_numbering.LogNumbering`)."""

    settled: bool  # nothing left for a round to number but new entries (the older walk done)

    async def __call__(self, horizon: datetime) -> int: ...


@dataclass
class QuietWatch:
    """What the last full round left, and the look that tells whether the next may be quiet."""

    # Per collection, its source's kind and where its look starts (the newest entry the last
    # full round had read, or its horizon where it had read none); None: the next is full.
    looks: dict[str, tuple[SourceKind, datetime]] | None = None
    epoch: int = 0
    until: datetime | None = None  # the lease is this holder's up to then
    full_at: datetime = field(default_factory=utcnow)
    quiet_rounds: int = 0  # rounds skipped since the process started (tests, metrics)

    def disarm(self) -> None:
        """A full round has begun: until it ends well, the next round is full too."""
        self.looks = None

    def settled(self, *, epoch: int, until: datetime, finished: bool,
                sources: Mapping[str, tuple[SourceKind, datetime | None, datetime]]) -> None:
        """After a full round that ended well. `sources`: per collection, its source's kind,
        the newest entry read (None: none yet) and the round's horizon. Quiet rounds may follow
        when the round `finished` its work and read nothing at or after a horizon."""
        self.epoch, self.until, self.full_at = epoch, until, utcnow()
        behind = all(newest is None or newest < horizon for _, newest, horizon in sources.values())
        self.looks = ({collection: (kind, horizon if newest is None else newest)
                       for collection, (kind, newest, horizon) in sources.items()}
                      if finished and behind else None)

    async def quiet(self, db: Db, holder: str, lease_seconds: float,
                    seen: Container[str]) -> bool:
        """Whether this round may be skipped: no entry at or after the looks' starts but
        those sequenced (`seen`), under the same lease (`holder`'s, of `lease_seconds`)."""
        if self.looks is None or utcnow() - self.full_at >= FULL_EVERY:
            return False
        if not await self._lease_kept(db, holder, lease_seconds):
            return False
        for collection, (kind, start) in self.looks.items():
            cursor = db.raw(collection).find({"at": {"$gte": start}}, {"_id": 1})
            async for doc in cursor:
                if leaves.source_key(kind, doc["_id"]) not in seen:
                    await cursor.close()
                    return False
        self.quiet_rounds += 1
        return True

    async def _lease_kept(self, db: Db, holder: str, lease_seconds: float) -> bool:
        assert self.until is not None
        if self.until - utcnow() > timedelta(seconds=lease_seconds / 2):
            return True
        held = await lease.take(db, holder, lease_seconds)
        if held is None or held["epoch"] != self.epoch:
            return False  # the full round sees the take-over, and its own lease
        self.until = held["until"]
        return True

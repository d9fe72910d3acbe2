"""Fair share between accounts: one account's API calls do not crowd out another's pages.

An account calling heavy routes back to back (its biggest log, its listing, its analytics, in a
loop) keeps the event loop, the database and the cores busy; another account's viewers then wait
for their pages. The spec has no 429 for reads, so nothing is refused: while another account's
pages are being read (one sent in the last `ACTIVE_SECONDS`), each API call of an account starts
only after a pause in proportion to what its previous calls took, so that its calls fill at
most `share` of the wall time, once they have run `BURST_SECONDS` ahead of it. An account with
no other account's reader beside it is never held; pages and the hosted viewer are never held
(a person waits for them: they are what is protected); no call waits more than
`LONGEST_WAIT_SECONDS`.

How it is used: `BaseHandler.prepare` awaits `turn` for an authenticated call of a paced route
and `on_finish` tells `done` how long it took; a bulk job a call started (the revoke-all) awaits
`step` after each of its steps instead; the page path tells `pages_read` whose pages it served
(`services.pages.fair_share_hook`). Why wall time, not CPU: a call's database work runs in the
database's process, and its wall time is what the other account's pages waited beside.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

ACTIVE_SECONDS = 1.0  # an account's pages count as being read this long after the last one
LONGEST_WAIT_SECONDS = 0.5  # a call is never held longer: nothing waits a second for this
# What an account's calls may run ahead of their share before any is held: a dashboard's burst
# of calls, or a test's, is never held; a client calling without pause is, after a moment.
BURST_SECONDS = 0.25


class Pace(Protocol):
    async def step(self, account_id: str, seconds: float) -> None:
        """Called between the steps of an account's bulk job, with the last step's time."""


class Unpaced:
    """A job no call started (recovery's): it only lets the other requests run between steps."""

    async def step(self, account_id: str, seconds: float) -> None:
        await asyncio.sleep(0)


UNPACED = Unpaced()


class PacedSteps:
    """The steps of one bulk job of an account, each timed from the end of the one before: the
    reads between two writes count too."""

    def __init__(self, pace: Pace, account_id: str) -> None:
        self.pace = pace
        self.account_id = account_id
        self._last = time.monotonic()

    async def next(self) -> None:
        await self.pace.step(self.account_id, time.monotonic() - self._last)
        self._last = time.monotonic()


class FairShare:
    def __init__(self, share: float, clock: Callable[[], float] = time.monotonic,
                 on_hold: Callable[[float], None] = lambda seconds: None) -> None:
        """`share`: the part of the wall time one account's API calls may fill while another
        account's pages are read (1: no pacing). `on_hold` is told each pause (the metrics)."""
        self.share = share
        self._clock = clock
        self._on_hold = on_hold
        self._read: dict[str, float] = {}  # account id: when one of its pages was last sent
        self._ready: dict[str, float] = {}  # account id: when its next call may start

    @property
    def enabled(self) -> bool:
        return 0 < self.share < 1

    def pause_before(self, account_id: str) -> float:
        """Seconds the account's next call waits now (0 when no other account's pages are
        being read, or its calls have not been busy)."""
        now = self._clock()
        if not self.enabled or not self._others_read(account_id, now):
            return 0.0
        ahead = self._ready.get(account_id, now) - now - BURST_SECONDS
        return max(0.0, min(ahead, LONGEST_WAIT_SECONDS))

    async def turn(self, account_id: str) -> float:
        """The account's call waits its pause, if any: returned, so that `done` is told the
        call's own time."""
        pause = self.pause_before(account_id)
        if pause > 0:
            self._on_hold(pause)
            await asyncio.sleep(pause)
        return pause

    def done(self, account_id: str, seconds: float) -> None:
        """A call of the account took `seconds`: its calls are owed a pause of
        seconds x (1 / share - 1) more; they wait once what they owe passes the burst, at most
        the longest wait."""
        if not self.enabled:
            return
        now = self._clock()
        ready = max(self._ready.get(account_id, now), now) + seconds * (1 / self.share - 1)
        self._ready[account_id] = min(ready, now + BURST_SECONDS + LONGEST_WAIT_SECONDS)

    async def step(self, account_id: str, seconds: float) -> None:
        """A bulk job's step for the account took `seconds`: the next waits its pause (or only
        lets the other requests run, when there is none)."""
        self.done(account_id, seconds)
        pause = self.pause_before(account_id)
        if pause > 0:
            self._on_hold(pause)
        await asyncio.sleep(pause)

    def pages_read(self, account_id: str) -> None:
        """A page of the account was sent."""
        self._read[account_id] = self._clock()

    def _others_read(self, account_id: str, now: float) -> bool:
        """Whether another account's pages were sent lately. Accounts whose pages have not
        been are forgotten here, so the scan covers the last second's."""
        quiet = [other for other, at in self._read.items() if now - at >= ACTIVE_SECONDS]
        for other in quiet:
            del self._read[other]
        self._forget_past_pauses(now)
        return any(other != account_id for other in self._read)

    def _forget_past_pauses(self, now: float) -> None:
        if len(self._ready) > 64:  # accounts that called once: their pause is over
            for account_id in [a for a, at in self._ready.items() if at <= now]:
                del self._ready[account_id]

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

Only another account's *readers* count, not the account itself reading its own pages: pages
asked for with the owner's key never count (`services.pages.fair_share_hook`), and pages read
through the hosted viewer from an address the account's own calls (its API keys, its members'
console) came from in the last `OWN_ADDRESS_SECONDS` count as the account's own reading (its
member's Preview of a file, a script reading a link it made), so that no account can pace every
other account's calls by reading its own links in a loop.

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
# An address an account's own calls came from is the account's own this long: its pages read
# from there are not another account's readers. Up to MOST_OWN_ADDRESSES per account (a fleet
# of callers beyond that is not all remembered; the newest are).
OWN_ADDRESS_SECONDS = 300.0
MOST_OWN_ADDRESSES = 16


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
        # account id: {address its own calls came from: when last}
        self._own: dict[str, dict[str, float]] = {}

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

    def pages_read(self, account_id: str, address: str | None = None) -> None:
        """A page of the account was sent to a reader at `address` (None: not known): it counts
        unless the address is one of the account's own callers'."""
        now = self._clock()
        if address is not None and self._is_own(account_id, address, now):
            return
        self._read[account_id] = now

    def caller_seen(self, account_id: str, address: str | None) -> None:
        """An authenticated call of the account (a key's, a member's) came from `address`."""
        if not self.enabled or address is None:
            return
        now = self._clock()
        own = self._own.setdefault(account_id, {})
        own.pop(address, None)  # re-inserted last: the dict keeps the newest at its end
        own[address] = now
        if len(own) > MOST_OWN_ADDRESSES:
            del own[next(iter(own))]
        if len(self._own) > 1024:  # accounts that called once long ago: forgotten
            self._forget_old_callers(now)

    def reading_counted(self, account_id: str) -> bool:
        """Whether the account's pages count as being read now (for the tests and metrics)."""
        at = self._read.get(account_id)
        return at is not None and self._clock() - at < ACTIVE_SECONDS

    def _is_own(self, account_id: str, address: str, now: float) -> bool:
        seen = self._own.get(account_id, {}).get(address)
        return seen is not None and now - seen < OWN_ADDRESS_SECONDS

    def _forget_old_callers(self, now: float) -> None:
        for account_id in list(self._own):
            own = self._own[account_id]
            for address in [a for a, at in own.items() if now - at >= OWN_ADDRESS_SECONDS]:
                del own[address]
            if not own:
                del self._own[account_id]

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

"""The order Office conversions run in: one at a time per process, accounts taking turns.

A conversion holds the one slot for seconds, or until its deadline when a document keeps
LibreOffice busy; served first come first served, one account's queue of such documents made
every other account wait for all of them. Here each account waits in its own line and the slot,
when it frees, goes to the account that has gone longest without it (round robin over the
accounts with something waiting): another account's next conversion waits for at most the one
running now, plus one turn of each other account that is waiting too, never for a whole queue
(the slot goes to the waiting account served longest ago).

An account holds at most PER_ACCOUNT conversions, running and waiting together; the process
at most MAX_WAITING waiting. Beyond either the upload is refused with 429 and Retry-After.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from vaultd.errors import TooManyRequests

MAX_WAITING = 4  # conversions queued behind the running one, all accounts together
PER_ACCOUNT = 2  # one account's conversions running or waiting
RETRY_AFTER = 10
BUSY = "the Office converter is busy; retry shortly"
ACCOUNT_BUSY = (f"this account already has {PER_ACCOUNT} Office documents converting or "
                "waiting; retry when one is done")


class FairSlot:
    """The one conversion slot of a process and the accounts' lines in front of it."""

    def __init__(self, max_waiting: int = MAX_WAITING, per_account: int = PER_ACCOUNT) -> None:
        self.max_waiting, self.per_account = max_waiting, per_account
        self._busy = False
        self._lines: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._held: dict[str, int] = {}  # per account: running or waiting
        self._served: dict[str, int] = {}  # per account holding any: when it last got the slot
        self._turns = 0
        self.waiting = 0

    @asynccontextmanager
    async def turn(self, account_id: str) -> AsyncIterator[None]:
        """Holds the slot for `account_id`'s conversion; TooManyRequests over a limit."""
        if self._held.get(account_id, 0) >= self.per_account:
            raise TooManyRequests(ACCOUNT_BUSY, retry_after=RETRY_AFTER)
        if self._busy and self.waiting >= self.max_waiting:
            raise TooManyRequests(BUSY, retry_after=RETRY_AFTER)
        self._held[account_id] = self._held.get(account_id, 0) + 1
        try:
            await self._enter(account_id)
            try:
                yield
            finally:
                self._hand_on()
        finally:
            self._held[account_id] -= 1
            if not self._held[account_id]:
                del self._held[account_id]
                self._served.pop(account_id, None)

    async def _enter(self, account_id: str) -> None:
        if not self._busy:
            self._busy = True
            self._note_served(account_id)
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lines.setdefault(account_id, deque()).append(granted)
        self.waiting += 1
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._hand_on()  # the slot was handed over as the wait was cancelled: pass it
            else:
                self._leave_line(account_id, granted)
            raise

    def _leave_line(self, account_id: str, granted: asyncio.Future[None]) -> None:
        line = self._lines.get(account_id)
        if line is not None and granted in line:
            line.remove(granted)
            self.waiting -= 1
            if not line:
                del self._lines[account_id]

    def _note_served(self, account_id: str) -> None:
        self._turns += 1
        self._served[account_id] = self._turns

    def _hand_on(self) -> None:
        """The slot to the oldest conversion of the waiting account served longest ago (never:
        first, in the order they came); nobody waiting: the slot is free. An account whose
        conversion just ran thus goes behind every other account waiting."""
        while self._lines:
            account_id = min(self._lines, key=lambda account: self._served.get(account, 0))
            line = self._lines[account_id]
            granted = line.popleft()
            self.waiting -= 1
            if not line:
                del self._lines[account_id]
            if not granted.done():  # a wait cancelled but not yet out of its line: skipped
                self._note_served(account_id)
                granted.set_result(None)
                return
        self._busy = False

"""The per-account rate of leak traces, in this process: images traced in any hour.

A trace costs a render worker up to a few seconds (an unmarked image goes through every
reading), in the account's share of the queue; the concurrency cap (`account_slots`) bounds
the memory held, this bounds the work asked for over time. Each image of a multipart trace
counts. The count is per vaultd process, like the concurrency cap.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from vaultd.errors import TooManyRequests

WINDOW_SECONDS = 3600.0


@dataclass
class TraceRate:
    per_hour: int
    clock: Callable[[], float] = time.monotonic
    _spent: dict[str, deque[tuple[float, int]]] = field(default_factory=dict)

    def spend(self, account_id: str, images: int) -> None:
        """Counts `images` for the account, or TooManyRequests (429 with Retry-After: the
        seconds until enough of the hour's images have aged out) without counting them."""
        now = self.clock()
        spent = self._spent.setdefault(account_id, deque())
        while spent and spent[0][0] <= now - WINDOW_SECONDS:
            spent.popleft()
        used = sum(count for _, count in spent)
        if used + images > self.per_hour:
            wait = self._wait(spent, used + images - self.per_hour, now)
            if not spent:
                del self._spent[account_id]
            raise TooManyRequests(
                f"too many images traced for this account (at most {self.per_hour} an hour);"
                f" retry in {wait} s", retry_after=wait)
        spent.append((now, images))

    @staticmethod
    def _wait(spent: deque[tuple[float, int]], excess: int, now: float) -> int:
        """Seconds until `excess` images of the window have aged out (an hour if more are
        asked at once than the hour allows)."""
        freed = 0
        for at, count in spent:
            freed += count
            if freed >= excess:
                return max(1, math.ceil(at + WINDOW_SECONDS - now))
        return int(WINDOW_SECONDS)

"""The per-account rate of leak traces, shared by every vaultd process of a deployment: images
traced in any hour.

A trace costs a render worker up to a few seconds (an unmarked image goes through every
reading), in the account's share of the queue; the concurrency cap (`account_slots`) bounds
the memory held, this bounds the work asked for over time. Each image of a multipart trace
counts. The hour's spends live in the database (`TRACE_RATES`, one record an account: pairs of
(time, images), those less than `MERGE_SECONDS` apart merged under the later time, so at most
61 whatever the rate, and an image ages out no sooner than it would alone), written by a
conditional update on the version read, so N processes allow the rate once, not N times: a
spend is a read and a write (again, when another process wrote in between). Times are the wall
clock, which the processes share.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import ServiceUnavailable, TooManyRequests

WINDOW_SECONDS = 3600.0
TRACE_RATES = "trace_rates"
# Writes lost to another process's in a row before the call gives up: each loss means another
# spend of the account was counted meanwhile.
ATTEMPTS = 8
MERGE_SECONDS = 60.0
Spends = list[tuple[float, int]]


class SpendStore(Protocol):
    async def read(self, account_id: str) -> tuple[int, Spends]:
        """The account's version (0: none yet) and its recorded spends, oldest first."""

    async def write(self, account_id: str, version: int, spends: Spends) -> bool:
        """Replace them if the version is still `version`; False if another writer came first."""


@dataclass
class TraceRate:
    per_hour: int
    store: SpendStore
    clock: Callable[[], float] = time.time

    async def spend(self, account_id: str, images: int) -> None:
        """Counts `images` for the account, or TooManyRequests (429 with Retry-After: the
        seconds until enough of the hour's images have aged out) without counting them."""
        for _ in range(ATTEMPTS):
            version, spent = await self.store.read(account_id)
            now = self.clock()
            spent = [(at, count) for at, count in spent if at > now - WINDOW_SECONDS]
            used = sum(count for _, count in spent)
            if used + images > self.per_hour:
                wait = _wait(spent, used + images - self.per_hour, now)
                raise TooManyRequests(
                    f"too many images traced for this account (at most {self.per_hour} an "
                    f"hour); retry in {wait} s", retry_after=wait)
            if spent and now - spent[-1][0] < MERGE_SECONDS:
                spent[-1] = (now, spent[-1][1] + images)
            else:
                spent.append((now, images))
            if await self.store.write(account_id, version, spent):
                return
        raise ServiceUnavailable("too many traces at once for this account; retry shortly")


def _wait(spent: Spends, excess: int, now: float) -> int:
    """Seconds until `excess` images of the window have aged out (an hour if more are asked at
    once than the hour allows)."""
    freed = 0
    for at, count in spent:
        freed += count
        if freed >= excess:
            return max(1, math.ceil(at + WINDOW_SECONDS - now))
    return int(WINDOW_SECONDS)


@dataclass
class DbSpends:
    """The spends in the database: what every process of the deployment counts against."""

    db: Db

    async def read(self, account_id: str) -> tuple[int, Spends]:
        doc = await self.db.raw(TRACE_RATES).find_one({"_id": account_id})
        if doc is None:
            return 0, []
        return int(doc["version"]), [(float(at), int(count)) for at, count in doc["spends"]]

    async def write(self, account_id: str, version: int, spends: Spends) -> bool:
        records = self.db.raw(TRACE_RATES)
        pairs = [[at, count] for at, count in spends]
        if version == 0:
            try:
                await records.insert_one({"_id": account_id, "version": 1, "spends": pairs})
            except DuplicateKeyError:
                return False
            return True
        result = await records.update_one({"_id": account_id, "version": version},
                                          {"$set": {"spends": pairs, "version": version + 1}})
        return bool(result.modified_count)


@dataclass
class MemorySpends:
    """The spends in this process alone (for tests of the window's arithmetic)."""

    records: dict[str, tuple[int, Spends]] = field(default_factory=dict)

    async def read(self, account_id: str) -> tuple[int, Spends]:
        return self.records.get(account_id, (0, []))

    async def write(self, account_id: str, version: int, spends: Spends) -> bool:
        if self.records.get(account_id, (0, []))[0] != version:
            return False
        self.records[account_id] = (version + 1, spends)
        return True

"""Waits until a shape's vaultd has caught up in the background before its routes are timed.

A shape's vaultd is started again over a store written while it was stopped (for minutes at
10^5 and 10^6 records, `bench.scale_shape_loading`), and its background work then catches up
for a while (at 10^5 under load: `audit_pieces` writes of 100 to 200 ms in the routes' windows,
and every route of the shape about twice as slow as the full-page vault's at p50, the account's
too, which reads the same one record on both). Timed then, a route measures that work, not
its own. So timing waits until the shape's database is asked about as little as the full-page
vault's, which has run at rest since it was seeded: each window of WINDOW_SECONDS, the
operations of both (`serverStatus` opcounters: queries, getMores, writes and other commands: a
walk that only reads counts too) are counted; two windows in a row with the shape's within
QUIET_FACTOR of the full page's (plus QUIET_SLACK a second) end the wait, and MOST_SECONDS
ends it anyway (said in the output: the table then measures the shape busy).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from vaultd.db import Db

WINDOW_SECONDS = 5.0
QUIET_FACTOR = 2.0
QUIET_SLACK = 4.0  # operations a second: a lease's renewal or a round's horizon more or less
QUIET_WINDOWS = 2
MOST_SECONDS = 900.0
OPERATIONS = ("insert", "query", "update", "delete", "getmore", "command")


async def _operations(db: Db) -> int:
    status = await db.database.client.admin.command("serverStatus")
    return sum(int(status["opcounters"].get(name, 0)) for name in OPERATIONS)


def settled(shape: Callable[[], Db], reference: Callable[[], Db]) -> tuple[float, bool]:
    """Seconds waited for the shape's database (opened by `shape`) to be asked no more than
    the reference's, and whether it was (False: MOST_SECONDS passed first)."""
    async def run() -> tuple[float, bool]:
        dbs = (shape(), reference())
        started = time.monotonic()
        try:
            quiet = 0
            while time.monotonic() - started < MOST_SECONDS:
                before = [await _operations(db) for db in dbs]
                await asyncio.sleep(WINDOW_SECONDS)
                after = [await _operations(db) for db in dbs]
                shaped, rest = (end - start for start, end in zip(before, after, strict=True))
                limit = QUIET_FACTOR * rest + QUIET_SLACK * WINDOW_SECONDS
                quiet = quiet + 1 if shaped <= limit else 0
                if quiet >= QUIET_WINDOWS:
                    return time.monotonic() - started, True
            return time.monotonic() - started, False
        finally:
            for db in dbs:
                await db.close()
    return asyncio.run(run())

"""Waits until a shape's vaultd has caught up in the background before its routes are timed.

A shape's vaultd is started again over a store written while it was stopped (for minutes at
10^5 and 10^6 records, `bench.scale_shape_loading`), and its background work then catches up
for a while (at 10^5 under load: `audit_pieces` writes of 100 to 200 ms in the routes' windows,
and every route of the shape about twice as slow as the full-page vault's at p50, the account's
too, which reads the same one record on both). Timed then, a route measures that work, not
its own. So timing waits until the shape's database is asked about as little as the full-page
vault's, which has run at rest since it was seeded: each window of WINDOW_SECONDS, the
operations of both (`serverStatus` opcounters: queries, getMores, writes and other commands: a
walk that only reads counts too) are counted, and PROBES reads of one record by `_id` are
timed on each, spread over the window. One operation running for minutes adds nothing to the
counts (SecantusDB's first audit round over 10^6 unsequenced entries: one find, its one lock
held while it decodes them), but every probe waits behind it: a window is quiet when the
shape's operations are within QUIET_FACTOR of the full page's (plus QUIET_SLACK a second) and
its median probe within QUIET_FACTOR of the full page's (plus PROBE_SLACK); a probe or a count
past its deadline makes the window busy. Two quiet windows in a row end the wait, and
MOST_SECONDS ends it anyway (said in the output: the table then measures the shape busy).

Quiet is not enough where the work is long: the audit sequencer's catch-up over a log it never
read (10^6 entries: minutes of reads of 300 entries, each under 50 ms, with rests between) can
pass both tests while every route still waits behind it. So a window is quiet only once the
audit has caught up too: every source's last look (`<kind>.looked` in the lease's cursors)
within CAUGHT_UP of the shape's clock (an idle sequencer moves it once a minute), or no lease
at all (no sequencer has run).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

from vaultd.db import Db
from vaultd.services.audit import quiet
from vaultd.services.audit.lease import LEASE_ID
from vaultd.services.audit.sequencer import LOOKED
from vaultd.timefmt import utcnow

WINDOW_SECONDS = 5.0
QUIET_FACTOR = 2.0
QUIET_SLACK = 4.0  # operations a second: a lease's renewal or a round's horizon more or less
QUIET_WINDOWS = 2
MOST_SECONDS = 900.0
OPERATIONS = ("insert", "query", "update", "delete", "getmore", "command")
PROBES = 5  # a window's probes, one every WINDOW_SECONDS / PROBES
# A probe's deadline: one waiting this long is behind an operation holding the database.
PROBE_SECONDS = 1.0
# Probes on an idle embedded database take 2 to 8 ms at a load average of 6 to 8 on the
# 2-core machine, 70 to 370 ms behind an unfiltered count of 5,000 records run back to back.
PROBE_SLACK = 0.02
PROBED, PROBE_ID = "accounts", "settle-probe"  # no such account: an index lookup, nothing read
# A source's last look this near the clock: the audit reads what arrives (a round a merge
# delay apart, its horizon `audit.late_arrival_seconds` behind), not a backlog. An idle
# sequencer's quiet rounds save no cursors: its full round moves them once a FULL_EVERY.
CAUGHT_UP = quiet.FULL_EVERY + timedelta(seconds=30)


async def _operations(db: Db) -> int | None:
    """The database's operations so far (None: it did not answer within a window)."""
    try:
        status = await asyncio.wait_for(db.database.client.admin.command("serverStatus"),
                                        WINDOW_SECONDS)
    except TimeoutError:
        return None
    return sum(int(status["opcounters"].get(name, 0)) for name in OPERATIONS)


async def _probe(db: Db) -> float:
    """Seconds one read of a record by `_id` took, PROBE_SECONDS at most: on an idle database a
    few ms, behind an operation holding it as long as that has left to run."""
    started = time.monotonic()
    try:
        await asyncio.wait_for(db.raw(PROBED).find_one({"_id": PROBE_ID}, {"_id": 1}),
                               PROBE_SECONDS)
    except TimeoutError:
        return PROBE_SECONDS
    return time.monotonic() - started


async def audit_caught_up(db: Db) -> bool:
    """Whether the audit sequencer reads only what arrives: each source's last look within
    CAUGHT_UP of now (True without a lease: no sequencer has run, nothing to catch up)."""
    try:
        lease = await asyncio.wait_for(db.raw("audit_sequencer").find_one({"_id": LEASE_ID}),
                                       WINDOW_SECONDS)
    except TimeoutError:
        return False
    if lease is None:
        return True
    looked = [at for kind, at in lease.get("cursors", {}).items() if kind.endswith(LOOKED)]
    return bool(looked) and min(looked) >= utcnow() - CAUGHT_UP


async def _window(dbs: Sequence[Db]) -> bool:
    """One window on the shape's database and the reference's: whether the shape's was quiet."""
    before = [await _operations(db) for db in dbs]
    probes: tuple[list[float], ...] = tuple([] for _ in dbs)
    for _ in range(PROBES):
        await asyncio.sleep(WINDOW_SECONDS / PROBES)
        for took, db in zip(probes, dbs, strict=True):
            took.append(await _probe(db))
    after = [await _operations(db) for db in dbs]
    shaped, rest = (None if start is None or end is None else end - start
                    for start, end in zip(before, after, strict=True))
    if shaped is None or rest is None:
        return False
    shape_probe, rest_probe = (statistics.median(took) for took in probes)
    return (shaped <= QUIET_FACTOR * rest + QUIET_SLACK * WINDOW_SECONDS
            and shape_probe <= QUIET_FACTOR * rest_probe + PROBE_SLACK
            and await audit_caught_up(dbs[0]))


def settled(shape: Callable[[], Db], reference: Callable[[], Db]) -> tuple[float, bool]:
    """Seconds waited for the shape's database (opened by `shape`) to be asked no more than
    the reference's and to answer a probe about as fast, and whether it was (False:
    MOST_SECONDS passed first)."""
    async def run() -> tuple[float, bool]:
        dbs = (shape(), reference())
        started = time.monotonic()
        try:
            quiet = 0
            while time.monotonic() - started < MOST_SECONDS:
                quiet = quiet + 1 if await _window(dbs) else 0
                if quiet >= QUIET_WINDOWS:
                    return time.monotonic() - started, True
            return time.monotonic() - started, False
        finally:
            for db in dbs:
                await db.close()
    return asyncio.run(run())

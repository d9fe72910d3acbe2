"""Which clock the marking's step size should follow: `python -m bench.step_clock`.

`background.StepSize` halves a revoke-all's marking step (`services.links.revoke_jobs.mark`)
after a step whose update took over `SLOW_STEP_SECONDS`. A fresh embedded SecantusDB gets one
account with `--links` links on one file, half live (`tests.scale_seed`); it profiles every
operation (level 2) while the revoke-all's marking runs for `--mark-for` seconds. Each update
of the marking is then known four ways: its round trip, with every wait for a CPU on a loaded
machine in it; what `StepSize.took` was given (the server's time from the reply,
`vaultd.db_server_time`, or the round trip where the reply has none); the server's record
(`system.profile`, whole milliseconds); and the round trip less that of a read by `_id` sent
just before the update (the machine's wait for a CPU at that moment, which the update's round
trip shares). Prints the four (p50, p95, max, the share over the slow mark), the links per
update the marking ran at, and how many it marked.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from bench.console import with_long_socket_timeout
from tests.embedded_database import running_database
from tests.scale_seed import seed_account
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.services.common import background
from vaultd.services.links import revoke_jobs


def _row(name: str, seconds: list[float]) -> str:
    ms = sorted(1000 * one for one in seconds)
    over = sum(one > 1000 * background.SLOW_STEP_SECONDS for one in ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return (f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {p95:.1f} | {ms[-1]:.1f} | "
            f"{over} ({100 * over / len(ms):.1f} %) |")


@dataclass
class Clocks:
    """Each marking update's time four ways (seconds), and the step sizes the marking ran at."""

    trips: list[float] = field(default_factory=list)  # the round trip
    timed: list[float] = field(default_factory=list)  # what StepSize.took was given
    less: list[float] = field(default_factory=list)  # the round trip less the probe's
    server: list[float] = field(default_factory=list)  # system.profile's
    sizes: list[int] = field(default_factory=list)


async def _measure(db: Db, links: int, mark_for: float) -> tuple[Clocks, int]:
    """The marking's updates' clocks (but the profile's, left in the database), and the links
    marked."""
    seeded = await seed_account(db, "Clock Co", files=1, entries=0, links=links)
    clocks = Clocks()
    timed, sizes = clocks.timed, clocks.sizes
    took, update_many = background.StepSize.took, AsyncCollection.update_many

    async def probing(collection: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        await collection.find_one({"_id": "no-such-link"}, {"_id": 1})
        probed = time.monotonic() - started
        result = await update_many(collection, *args, **kwargs)
        trip = time.monotonic() - started - probed
        clocks.trips.append(trip)
        clocks.less.append(max(0.0, trip - probed))
        return result

    def recording(step: background.StepSize, seconds: float) -> None:
        timed.append(seconds)
        sizes.append(step.size)
        took(step, seconds)

    background.StepSize.took = recording  # type: ignore[method-assign,assignment]
    AsyncCollection.update_many = probing  # type: ignore[method-assign,assignment]
    try:
        await db.database.command({"profile": 2, "slowms": 0})
        await revoke_jobs.revoke_all(db, seeded.account_id, seeded.busy_file, owner="bench")
        try:
            await asyncio.wait_for(revoke_jobs.all_marked(), mark_for)
        except TimeoutError:
            revoke_jobs.stop_marking()
        await db.database.command({"profile": 0})
    finally:
        background.StepSize.took = took  # type: ignore[method-assign]
        AsyncCollection.update_many = update_many  # type: ignore[method-assign]
    marked = await db.links.count_documents({"fileId": seeded.busy_file, "revoked": True})
    return clocks, marked


async def _server_updates(db: Db) -> list[float]:
    found: list[dict[str, Any]] = await db.database["system.profile"].find(
        {"op": "update", "ns": f"{db.database.name}.links"}).to_list(None)
    return [int(entry.get("millis", 0)) / 1000 for entry in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=4000)
    parser.add_argument("--mark-for", type=float, default=30.0)
    args = parser.parse_args()

    async def run(storage: Path) -> tuple[Clocks, int]:
        with running_database(storage) as server:
            db = connect(with_long_socket_timeout(server.uri), "vaultd")  # a loaded seeding
            try:
                await ensure_indexes(db)
                clocks, marked = await _measure(db, args.links, args.mark_for)
                clocks.server = await _server_updates(db)
                return clocks, marked
            finally:
                await db.close()

    with tempfile.TemporaryDirectory() as work:
        clocks, marked = asyncio.run(run(Path(work) / "db"))
    print(f"{marked} links marked in at most {args.mark_for:.0f} s; links per update: "
          f"{dict(sorted(_counts(clocks.sizes).items()))}")
    print("| clock | updates | p50 ms | p95 ms | max ms | over the slow mark |")
    print("|---|---|---|---|---|---|")
    print(_row("the round trip", clocks.trips))
    print(_row("vaultd's step clock (`StepSize.took`: the reply's server time)", clocks.timed))
    print(_row("the database's (`system.profile`)", clocks.server))
    print(_row("the round trip less a probe's just before", clocks.less))


def _counts(sizes: list[int]) -> dict[int, int]:
    return {size: sizes.count(size) for size in set(sizes)}


if __name__ == "__main__":
    main()

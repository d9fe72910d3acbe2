"""Which clock the marking's step size should follow: `python -m bench.step_clock`.

`background.StepSize` halves a revoke-all's marking step (`services.links.revoke_jobs.mark`)
after a step whose update took over `SLOW_STEP_SECONDS`, timed by vaultd: the round trip,
with every wait for a CPU on a loaded machine in it. The alternative is the database's own
time for the same update. A fresh embedded SecantusDB gets one account with `--links` links
on one file, half live (`tests.scale_seed`); it profiles every operation (level 2) while the
revoke-all's marking runs for `--mark-for` seconds. Each update of the marking is then known
twice: as vaultd timed it (what `StepSize.took` was given) and as the server recorded it
(`system.profile`, whole milliseconds); and a third way, the round trip less that of a read by
`_id` sent just before the update (the machine's wait for a CPU at that moment, which the
update's round trip shares). Prints the three (p50, p95, max, the share over the slow mark),
the links per update the marking ran at, and how many it marked.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
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


async def _measure(db: Db, links: int, mark_for: float
                   ) -> tuple[list[float], list[float], list[int], int]:
    """The marking's updates as vaultd timed them, the same less the probe read before each,
    the step sizes they ran at, the links marked; the profile is left in the database."""
    seeded = await seed_account(db, "Clock Co", files=1, entries=0, links=links)
    timed: list[float] = []
    probed: list[float] = []
    sizes: list[int] = []
    took, update_many = background.StepSize.took, AsyncCollection.update_many

    async def probing(collection: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        await collection.find_one({"_id": "no-such-link"}, {"_id": 1})
        probed.append(time.monotonic() - started)
        return await update_many(collection, *args, **kwargs)

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
    less = [max(0.0, one - probe) for one, probe in zip(timed, probed[-len(timed):], strict=True)]
    return timed, less, sizes, marked


async def _server_updates(db: Db) -> list[float]:
    found: list[dict[str, Any]] = await db.database["system.profile"].find(
        {"op": "update", "ns": f"{db.database.name}.links"}).to_list(None)
    return [int(entry.get("millis", 0)) / 1000 for entry in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=4000)
    parser.add_argument("--mark-for", type=float, default=30.0)
    args = parser.parse_args()

    async def run(storage: Path
                  ) -> tuple[list[float], list[float], list[int], int, list[float]]:
        with running_database(storage) as server:
            db = connect(with_long_socket_timeout(server.uri), "vaultd")  # a loaded seeding
            try:
                await ensure_indexes(db)
                timed, less, sizes, marked = await _measure(db, args.links, args.mark_for)
                return timed, less, sizes, marked, await _server_updates(db)
            finally:
                await db.close()

    with tempfile.TemporaryDirectory() as work:
        timed, less, sizes, marked, server = asyncio.run(run(Path(work) / "db"))
    print(f"{marked} links marked in at most {args.mark_for:.0f} s; links per update: "
          f"{dict(sorted(_counts(sizes).items()))}")
    print("| clock | updates | p50 ms | p95 ms | max ms | over the slow mark |")
    print("|---|---|---|---|---|---|")
    print(_row("vaultd's (the round trip)", timed))
    print(_row("the database's (`system.profile`)", server))
    print(_row("the round trip less a probe's just before", less))


def _counts(sizes: list[int]) -> dict[int, int]:
    return {size: sizes.count(size) for size in set(sizes)}


if __name__ == "__main__":
    main()

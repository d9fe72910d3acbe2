"""Every listed route on real data shapes, against a full page and the empty vault in the same run:
`python -m bench.scale_shapes --shapes import hot-file deleted link-bursts --size 100000`.

`bench.scale` seeds a year of evenly spread records; data does not arrive evenly. Here a
fresh vaultd on the embedded default gets one shape of `bench.scale_shape_seeds` (an import's
burst, a hot file's log, half the files deleted, links in bursts), written straight into its
database in bulk, while two more fresh vaultd hold the empty vault's account (the same
account with nothing in it) and the full-page vault's (the same with enough records of every
kind that each route's page is full, as on a shape: `seed_full_page`). The three run
throughout; each route (`bench.scale_shape_routes`) is asked of the three in turn,
`--samples` times after two warm-up calls each, so a burst of load on the shared machine falls
on all. The bar is held against the full page: a shape's page of 200 log entries beside the
empty vault's one measures the page, not the shape (the ratio to the empty vault is shown
too). Then the shape's database profiles every operation
(SecantusDB's `system.profile`, level 2, whole milliseconds) while each route is asked
PROFILED_ROUNDS times more: the longest single operation of its window is the route's (a
background loop's operation in that window would count too: the table names the command).
The profile is on for one route's window at a time, read and dropped after it.

Prints, per shape, a Markdown table: p50 / p95 of each side, the p95 ratios, what each
answered (items returned), the longest operation, and the bar (p95 within 2x of the full
page's; a deep page reads the records before it, so it is labelled, not judged).
The table is printed once the routes are timed ("not profiled" in the operation's column),
then again once they are profiled: a profile that cannot be read leaves the timings printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.console import with_long_socket_timeout
from bench.scale_shape_loading import stopped_vault
from bench.scale_shape_routes import (
    Answer,
    Route,
    Session,
    kept_signed_in,
    routes,
    sign_in,
    signed_in,
)
from bench.scale_shape_seeds import (
    MIXED_SEED,
    SHAPES,
    Seeded,
    begin_shape,
    fill_shape,
    seed_base,
    seed_full_page,
)
from bench.scale_shape_settle import settled
from tests.vault_process import VaultProcess
from vaultd.db import Db, connect
from vaultd.embedded_db import running_address

BAR = 2.0  # the target: every route's p95 within 2x its p95 on a full page
SIDES = ("empty", "full page", "shape")
MAX_ERRORS = 3
PROFILED_ROUNDS = 5
# A shape's vaultd is started again over a store written while it was stopped: its first
# reads bring the records into the database's cache, and its rounds catch up on the time it
# was stopped. Every route is asked this many times on it before any is timed.
SETTLING_ROUNDS = 5
# A window's profile is read in one `find` of at most PROFILE_ENTRIES entries (5 calls of a
# route issue tens of operations, background rounds a few more), and given this long at most.
PROFILE_ENTRIES = 10_000
PROFILE_READ_SECONDS = 120.0
DATABASE = "vaultd"
# The collections a shape may load in bulk (indexes built after the insert): their indexes are
# read from each vault after the run, so the shape's can be held to the empty vault's.
LOADED = ("access_log", "files", "links")
VAULT_ENV = {"VAULTD_RENDER_WORKERS": "1"}  # no page is rendered here


@dataclass
class Timing:
    p50: float
    p95: float
    samples: int


@dataclass
class Row:
    route: Route
    empty: Timing
    page: Timing  # the full-page vault's
    shaped: Timing
    returned_empty: int
    returned_page: int
    returned_shaped: int
    longest_ms: int = -1  # -1: not profiled
    longest_what: str = ""
    failed: list[str] = field(default_factory=list)  # "<side> <status> <error>" per answer
    # "<collection>.<field>" of every field the window's `find`s filtered on: a log read by
    # number filters on its scope's number (`access_log.fileSeq`), one by time on `at` alone.
    filtered: set[str] = field(default_factory=set)

    @property
    def ratio(self) -> float:
        """The shape's p95 over the full page's: the bar."""
        return self.shaped.p95 / self.page.p95

    @property
    def empty_ratio(self) -> float:
        return self.shaped.p95 / self.empty.p95

    @property
    def verdict(self) -> str:
        if self.failed:
            samples = self.empty.samples + self.page.samples + self.shaped.samples
            return f"**no**: {self.failed[0]} ({len(self.failed)} of {samples})"
        if self.route.depth:
            return f"deep page: reads the {self.route.depth:,} before it (no 2x bar)"
        return "yes" if self.ratio <= BAR else "**no**"


@dataclass
class ShapeRun:
    shape: str
    size: int
    seeding_seconds: float
    seeded: Seeded
    rows: list[Row] = field(default_factory=list)
    # `index_information` of each LOADED collection after the run, the shape's and the empty
    # vault's (whose records were all inserted with vaultd's indexes in place).
    indexes: dict[str, Any] = field(default_factory=dict)
    empty_indexes: dict[str, Any] = field(default_factory=dict)
    # How long the shape's database took to be asked no more than the full page's after its
    # restart (`bench.scale_shape_settle`), and whether it did before the wait's end.
    settled_seconds: float = 0.0
    quiet: bool = True


def _database(vault: VaultProcess) -> Db:
    uri = running_address(vault.data_dir / "db")
    if uri is None:
        raise RuntimeError("vaultd's embedded database is not running")
    return connect(with_long_socket_timeout(uri), DATABASE)


def _seed(vault: VaultProcess, fill: Callable[[Db], Awaitable[Seeded]]) -> Seeded:
    async def run() -> Seeded:
        db = _database(vault)
        try:
            return await fill(db)
        finally:
            await db.close()
    seeded = asyncio.run(run())
    vault.secrets.append(seeded.key)
    return seeded


def _percentiles(seconds: list[float]) -> Timing:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return Timing(statistics.median(ordered) * 1000, p95 * 1000, len(ordered))


def _interleaved(route: Route, sides: tuple[Session, Session, Session], samples: int) -> Row:
    """Each side asked in turn (which goes first rotating): p95s from one stretch. An answer
    other than 200 is timed too and counted; after MAX_ERRORS of them the route's sampling
    stops (a read that times out would otherwise take minutes per route)."""
    for _ in range(2):
        for session in sides:
            session.ask(route)
    answers: list[list[Answer]] = [[] for _ in sides]
    for sample in range(samples):
        for place in range(len(sides)):
            side = (sample + place) % len(sides)
            answers[side].append(sides[side].ask(route))
        if sum(answer.status != 200 for side in answers for answer in side) >= MAX_ERRORS:
            break
    empty, page, shaped = (_percentiles([answer.seconds for answer in side]) for side in answers)
    returned = [max(answer.returned for answer in side) for side in answers]
    row = Row(route, empty, page, shaped, *returned)
    row.failed = [f"{name} {answer.status} {answer.error}"
                  for name, side in zip(SIDES, answers, strict=True) for answer in side
                  if answer.status != 200]
    return row


def _indexes(vault: VaultProcess) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        db = _database(vault)
        try:
            return {name: await db.raw(name).index_information() for name in LOADED}
        finally:
            await db.close()
    return asyncio.run(run())


def _profiled(vault: VaultProcess, session: Session, rows: list[Row]) -> None:
    """Each route's longest single database operation, from the database's own profile.

    The profile is on only while one route is asked, then read and dropped before the next
    route: each read holds one window's entries, whatever the shape's size (read after every
    window at once, at 10^6 the capped `system.profile` scans outlived the driver's 600 s).
    A read is still bounded in time; once one passes PROFILE_READ_SECONDS, the routes left are
    marked not profiled rather than waited for."""
    async def run() -> None:
        db = _database(vault)
        try:
            for row in rows:
                await db.database.command({"profile": 2, "slowms": 0})
                try:
                    for _ in range(PROFILED_ROUNDS):
                        await asyncio.to_thread(session.ask, row.route)
                finally:
                    await db.database.command({"profile": 0})
                try:
                    found = await asyncio.wait_for(_window(db), PROFILE_READ_SECONDS)
                except TimeoutError:
                    print(f"the profile of {row.route.name} was not read in "
                          f"{PROFILE_READ_SECONDS:.0f} s: the routes left are not profiled",
                          flush=True)
                    return
                _longest(row, found)
        finally:
            await db.close()
    asyncio.run(run())


async def _window(db: Db) -> list[dict[str, Any]]:
    """The profile's entries (one window's), the collection dropped after the read."""
    found: list[dict[str, Any]] = await db.database["system.profile"].find(
        {}).to_list(PROFILE_ENTRIES)
    await db.database.drop_collection("system.profile")
    return found


def _longest(row: Row, found: list[dict[str, Any]]) -> None:
    row.filtered = {name for entry in found for name in _filtered(entry)}
    if found:
        worst = max(found, key=lambda entry: int(entry.get("millis", 0)))
        row.longest_ms = int(worst.get("millis", 0))
        row.longest_what = _named(worst)
    else:
        row.longest_ms = 0


def _named(entry: dict[str, Any]) -> str:
    """A profiled operation as `find files` (the command and its collection)."""
    command = entry.get("command") or {}
    name = next(iter(command), entry.get("op", "?"))
    target = command.get(name)
    return f"{name} {target}" if isinstance(target, str) else str(name)


def _filtered(entry: dict[str, Any]) -> set[str]:
    """The fields a profiled `find` filtered on, as `<collection>.<field>`."""
    command = entry.get("command") or {}
    target = command.get("find")
    if not isinstance(target, str):
        return set()
    return {f"{target}.{name}" for name in _fields(command.get("filter") or {})}


def _fields(query: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for key, value in query.items():
        if key in ("$and", "$or") and isinstance(value, list):
            found |= {name for part in value for name in _fields(part)}
        else:
            found.add(key)
    return found


def _started(root: Path, name: str) -> VaultProcess:
    return VaultProcess(root / name, env=dict(VAULT_ENV)).start(timeout=300)


def measure(shapes: list[str], size: int, samples: int, work: Path,
            report: Callable[[ShapeRun], None] = lambda run: None,
            timed: Callable[[ShapeRun], None] = lambda run: None, seed: int = MIXED_SEED
            ) -> list[ShapeRun]:
    """The empty and the full-page vaults, and each shape's vault, one shape at a time beside
    them; `timed` is given each shape's run as soon as its routes are timed (before the
    database's profile, which may be long at 10^6), `report` once it is profiled too (`seed`:
    the `mixed` shape's draw)."""
    empty_vault = _started(work, "empty")
    runs = []
    try:
        page_vault = _started(work, "full-page")
        try:
            references = [(empty_vault, sign_in(empty_vault, _seed(empty_vault, seed_base))),
                          (page_vault, signed_in(page_vault, _seed(page_vault, seed_full_page)))]
            try:
                empty_indexes = _indexes(empty_vault)
                for shape in shapes:
                    runs.append(_measure_shape(work, shape, size, samples, references,
                                               page_vault, timed, seed))
                    runs[-1].empty_indexes = empty_indexes
                    report(runs[-1])
            finally:
                for _, session in references:
                    session.close()
        finally:
            page_vault.stop()
    finally:
        empty_vault.stop()
    return runs


def _measure_shape(work: Path, shape: str, size: int, samples: int,
                   references: list[tuple[VaultProcess, Session]], at_rest: VaultProcess,
                   timed: Callable[[ShapeRun], None], seed: int) -> ShapeRun:
    """`references`: the empty and full-page vaults and their sessions, each session
    replaced by a new one where it ended while the shape was seeded."""
    vault = _started(work, f"shape-{shape}")
    try:
        started = time.perf_counter()
        seeded = _seed(vault, begin_shape)
        stopped_vault(vault, lambda db: fill_shape(db, seeded, shape, size, seed))
        run = ShapeRun(shape, size, time.perf_counter() - started, seeded)
        print(f"{shape} at {size:,}: seeded in {run.seeding_seconds:.0f} s", flush=True)
        run.settled_seconds, run.quiet = settled(lambda: _database(vault),
                                                 lambda: _database(at_rest))
        print(f"{shape} at {size:,}: {'quiet' if run.quiet else 'still busy'} after "
              f"{run.settled_seconds:.0f} s", flush=True)
        session = signed_in(vault, seeded)
        references[:] = [(reference, kept_signed_in(reference, reference_session))
                         for reference, reference_session in references]
        try:
            for _ in range(SETTLING_ROUNDS):
                for route in routes():
                    session.ask(route)
            for route in routes():
                run.rows.append(_interleaved(
                    route, (*(reference for _, reference in references), session), samples))
            timed(run)
            _profiled(vault, session, run.rows)
            run.indexes = _indexes(vault)
        finally:
            session.close()
        return run
    finally:
        vault.stop()


def table(run: ShapeRun) -> str:
    written = ", ".join(f"{kind} {count:,}" for kind, count in sorted(run.seeded.records.items()))
    loaded = ", ".join(f"{kind} {count:,}" for kind, count in
                       sorted(run.seeded.loader.loaded.items())) or "none"
    quiet = "quiet" if run.quiet else "**still busy**"
    head = [f"Shape `{run.shape}`, N = {run.size:,} (seeded in {run.seeding_seconds:.0f} s: "
            f"{written}; {run.seeded.live_files:,} live files; indexes built after the insert: "
            f"{loaded}; {quiet} {run.settled_seconds:.0f} s after its restart)",
            *([f"The shape's draw: {run.seeded.plan}."] if run.seeded.plan else []), "",
            "| route | empty p50 / p95 ms | full page p50 / p95 ms | shape p50 / p95 ms | "
            "p95 ratio to the full page | to empty | returned (empty / full page / shape) | "
            "longest db operation ms | p95 within 2x the full page |",
            "|---|---|---|---|---|---|---|---|---|"]
    rows = [f"| `{row.route.name}` | {_times(row.empty)} | {_times(row.page)} | "
            f"{_times(row.shaped)} | {row.ratio:.2f}x | {row.empty_ratio:.2f}x | "
            f"{row.returned_empty} / {row.returned_page} / {row.returned_shaped} | "
            f"{_longest_cell(row)} | {row.verdict} |" for row in run.rows]
    return "\n".join([*head, *rows])


def _times(timing: Timing) -> str:
    return f"{timing.p50:.1f} / {timing.p95:.1f}"


def _longest_cell(row: Row) -> str:
    if row.longest_ms < 0:
        return "not profiled"
    return f"{row.longest_ms} ({row.longest_what or 'none'})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--seed", type=int, default=MIXED_SEED, help="the mixed shape's draw")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(f"load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-shapes-") as work:
        measure(args.shapes, args.size, args.samples, Path(work),
                lambda run: print(f"\nProfiled:\n\n{table(run)}\n", flush=True),
                lambda run: print(f"\nTimed (the profile follows):\n\n{table(run)}\n",
                                  flush=True), args.seed)
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")


if __name__ == "__main__":
    main()


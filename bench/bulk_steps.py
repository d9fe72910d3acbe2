"""How long each database operation of vaultd's bulk work takes: `python -m bench.bulk_steps`.

Work touching many records (a revoke-all, a file's deletion, the bulk walks of verify,
rotation, migration and backup) runs in steps, none above about 50 ms on the embedded database,
since its one lock makes every other request wait behind the step in progress.

A fresh embedded SecantusDB with vaultd's indexes gets one account (`tests.scale_seed`) with
`--links` links on its busiest file (half expired), as many access-log entries and a tenth as
many files. Then, each timed through the driver's command monitoring (the round trip as the
client sees it: queueing behind the lock included):

- `revoke-all`: `services.links.revoke_jobs.revoke_all` of the file's live links (the call:
  one write, whatever their number), then `revoke marking`: its background steps marking the
  link records (`revoke_jobs.all_marked`);
- `walk <collection>`: `services.common.id_ranges.batches` over files, links and the log, the
  reads of verify, gc, migrate, rewrap and backup;
- `delete (the call)`: `services.files.deletions.delete_file` of a second file with as many
  links (one write and the settling, whatever their number), then `delete clean-up`: its
  background steps (`deletions.clean_up`: the links, then their aggregates, removed in `_id`
  windows, each delete followed by a rest as long as it took);
- `retention`: `services.common.outbox.prune` of as many webhook delivery records, spread
  over the past year, keeping the last 30 days;
- `audit catch-up`: the audit sequencer's rounds over the seeded log, which no sequencer has
  read (a first round, as after turning `audit.enabled` on over a year of log): its plan's
  walk and its windows (`services.audit.catch_up`), round after round without the merge delay,
  until a round finds nothing left. `--catch-up-only`: the account gets only its log (`--links`
  entries, one file) and only the catch-up is timed.

With `--revoke-call-only`, the account gets only its links (no log, one file) and only the
revoke-all's call is timed: its background marking is stopped once the call has answered (the
size of a revoke-all of 100,000 live links, `--links 200000`, without minutes of marking).

With `--load N`, N clients of their own connection (not timed) meanwhile read one small
account's records in a loop (a page's database work: a link by hash, a file by id), so the
steps run against the lock's other users.

With `--revoke-only`, the account gets only its links (no log, one file), and the revoke-all's
call and its background marking are timed while a bystander (another account, on a connection
of its own) repeats a page's database work as a page sends it: its link read with the file's
generation joined (`links.read_link`), then its file by id. The bystander's times (the two
commands, end to end) are printed at rest (`--rest` seconds before the revoke) and during the
call and the marking: p50, p95 and max (`--links 200000`: a revoke-all of 100,001 live links).
The call's own figures are printed as soon as it answers; `--mark-for S` times the marking for
S seconds only (its steps are the same batches by the same indexes however many links remain:
`tests/test_background_steps.py`), then stops it and counts the links it marked.
Prints a Markdown table: operations, p50, p99 and max in ms, and how many took over 50 ms.
Its process settles Python's collector as it starts, as vaultd's does (`vaultd.collector`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from pymongo import monitoring

from backends.local import LocalBackend
from tests.embedded_database import recorded_db, running_database, vault_db
from tests.scale_seed import seed_account
from vaultd import collector
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.db_server_time import SERVER_MILLIS
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import background, id_ranges, outbox
from vaultd.services.files import deletions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.links import links as view_links
from vaultd.services.links import revoke_jobs
from vaultd.timefmt import utcnow

SLOW_MS = 50.0
KEEP = timedelta(days=30)


@dataclass
class StepTimes(monitoring.CommandListener):
    """Durations (ms) of the commands sent while `label` is set, by label."""

    label: str | None = None
    times: dict[str, list[float]] = field(default_factory=dict)
    # (label, command and collection, ms) of each command over SLOW_MS: which ones a table's
    # "over 50 ms" counts
    slow: list[tuple[str, str, float]] = field(default_factory=list)
    _sent: dict[int, str] = field(default_factory=dict)

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.label is not None:
            target = event.command.get(event.command_name)
            self._sent[event.request_id] = f"{event.command_name} {target}"

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        sent = self._sent.pop(event.request_id, "")
        if self.label is not None:
            took = event.duration_micros / 1000
            self.times.setdefault(self.label, []).append(took)
            if took > SLOW_MS:
                # a write's own time in the server, where it says (`vaultd.db_server_time`):
                # the rest of a round trip is the wait behind the commands sent beside it
                inside = (event.reply or {}).get(SERVER_MILLIS)
                named = sent if inside is None else f"{sent} ({inside:.1f} ms in the server)"
                self.slow.append((self.label, named, took))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.succeeded(event)  # type: ignore[arg-type]  # same duration field


@dataclass
class Work:
    seconds: float
    records: int  # what the work revoked, walked, deleted or pruned


async def _timed(steps: StepTimes, label: str, work: Callable[[], Awaitable[int]]) -> Work:
    steps.label = label
    started = time.perf_counter()
    try:
        records = await work()
    finally:
        steps.label = None
    return Work(time.perf_counter() - started, records)


async def _revoke_call_only(db: Db, steps: StepTimes, links: int) -> dict[str, Work]:
    big = await seed_account(db, "Big Co", files=1, entries=0, links=links)
    took = {"revoke-all": await _timed(steps, "revoke-all", lambda: (
        revoke_jobs.revoke_all(db, big.account_id, big.busy_file, "bench")))}
    revoke_jobs.stop_marking()  # a bench's database goes: the job would be resumed
    return took


@dataclass
class Bystander:
    """Another account's page work, timed (ms) under the phase named in `phase`."""

    phase: str = "at rest"
    times: dict[str, list[float]] = field(default_factory=dict)

    async def run(self, db: Db, stop: asyncio.Event, account_id: str) -> None:
        link = await db.links.find_one({"accountId": account_id})
        assert link is not None
        while not stop.is_set():
            started = time.perf_counter()
            await view_links.read_link(db, {"hash": link["hash"]})
            await db.files.find_one({"_id": link["fileId"]})
            self.times.setdefault(self.phase, []).append(
                (time.perf_counter() - started) * 1000)
            await asyncio.sleep(0)  # another connection's commands, between two pages


async def _revoke_only(db: Db, other: Db, steps: StepTimes, links: int, rest: float,
                       mark_for: float | None) -> tuple[dict[str, Work], Bystander]:
    big = await seed_account(db, "Big Co", files=1, entries=0, links=links)
    small = await seed_account(db, "Small Co", files=1, entries=0, links=10)
    bystander, stop = Bystander(), asyncio.Event()
    reading = asyncio.create_task(bystander.run(other, stop, small.account_id))
    took: dict[str, Work] = {}
    try:
        await asyncio.sleep(rest)
        bystander.phase = "during the call and the marking"
        took["revoke-all"] = await _timed(steps, "revoke-all", lambda: (
            revoke_jobs.revoke_all(db, big.account_id, big.busy_file, "bench")))
        print(table({"revoke-all": steps.times["revoke-all"]}, took), flush=True)
        took["revoke marking"] = await _timed(steps, "revoke marking", lambda: (
            _marked_for(took["revoke-all"].records, mark_for)))
    finally:
        stop.set()
        await reading
    if mark_for is not None:  # read once the bystander stopped, by the (fileId, revoked) index
        marked = db.links.find({"fileId": big.busy_file, "revoked": True}, {"_id": 1})
        took["revoke marking"].records = len(await marked.to_list())
    return took, bystander


async def _marked_for(revoked: int, seconds: float | None) -> int:
    """The marking, for `seconds` at most (None: to its end)."""
    if seconds is None:
        return await _marked(revoked)
    try:
        await asyncio.wait_for(revoke_jobs.all_marked(), seconds)
    except TimeoutError:
        revoke_jobs.stop_marking()
    return 0  # counted once the bystander stopped


def bystander_table(bystander: Bystander) -> str:
    rows = ["| bystander's page work | pages | p50 ms | p95 ms | max ms |", "|---|---|---|---|---|"]
    for phase, durations in bystander.times.items():
        ordered = sorted(durations)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        rows.append(f"| {phase} | {len(ordered):,} | {statistics.median(ordered):.1f} | "
                    f"{p95:.1f} | {ordered[-1]:.1f} |")
    return "\n".join(rows)


async def _marked(revoked: int) -> int:
    await revoke_jobs.all_marked()
    return revoked


async def _walk(db: Db, name: str) -> int:
    return sum([len(batch) async for batch in id_ranges.batches(db.raw(name), {"_id": 1})])


async def _load(db: Db, stop: asyncio.Event, account_id: str) -> None:
    link = await db.links.find_one({"accountId": account_id})
    assert link is not None
    while not stop.is_set():
        await db.links.find_one({"hash": link["hash"]})
        await db.files.find_one({"_id": link["fileId"]})


async def run_revoke_only(links: int, rest: float, storage: Path, mark_for: float | None
                          ) -> tuple[dict[str, list[float]], dict[str, Work], Bystander]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db, vault_db(server) as other:
            took, bystander = await _revoke_only(db, other, steps, links, rest, mark_for)
            return steps.times, took, bystander


async def run(links: int, load: int, storage: Path, call_only: bool = False,
              catch_up_only: bool = False) -> tuple[dict[str, list[float]], dict[str, Work]]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db, vault_db(server) as other:
            if call_only:
                return steps.times, await _revoke_call_only(db, steps, links)
            if catch_up_only:
                await seed_account(db, "Logged Co", files=1, entries=links, links=0)
                return steps.times, {"audit catch-up": await _timed(
                    steps, "audit catch-up", lambda: _caught_up(db))}
            big = await seed_account(db, "Big Co", files=links // 10, entries=links, links=links)
            small = await seed_account(db, "Small Co", files=10, entries=100, links=10)
            stop = asyncio.Event()
            loaders = [asyncio.create_task(_load(other, stop, small.account_id))
                       for _ in range(load)]
            took: dict[str, Work] = {}
            try:
                took["revoke-all"] = await _timed(steps, "revoke-all", lambda: (
                    revoke_jobs.revoke_all(db, big.account_id, big.busy_file, "bench")))
                took["revoke marking"] = await _timed(steps, "revoke marking", lambda: (
                    _marked(took["revoke-all"].records)))
                for name in ("files", "links", "access_log"):
                    took[f"walk {name}"] = await _timed(steps, f"walk {name}",
                                                        lambda n=name: _walk(db, n))
                doomed = await seed_account(db, "Doomed Co", files=1, entries=0, links=links)
                store = BlobStore(LocalBackend(storage.parent / "blobs"), MasterKeyring.generate())
                took["delete (the call)"] = await _timed(steps, "delete (the call)", lambda: (
                    _deleted(db, store, doomed.account_id, doomed.busy_file, links)))
                took["delete clean-up"] = await _timed(steps, "delete clean-up",
                                                       lambda: _cleaned(links))
                await _seed_deliveries(db, links)
                took["retention"] = await _timed(steps, "retention", lambda: outbox.prune(
                    db, KEEP.total_seconds()))
                took["audit catch-up"] = await _timed(steps, "audit catch-up",
                                                      lambda: _caught_up(db))
            finally:
                stop.set()
                await asyncio.gather(*loaders)
            return steps.times, took


async def _seed_deliveries(db: Db, count: int) -> None:
    now = utcnow()
    docs = [{"_id": str(uuid.uuid4()), "messageId": f"msg_{n}", "endpointId": "ep_bench",
             "accountId": "bench", "type": "file.viewed", "attempt": 1,
             "at": now - timedelta(days=365) * (n / count), "status": 200, "ok": True,
             "durationMs": 3} for n in range(count)]
    for first in range(0, count, 2000):
        await db.raw(db.webhook_deliveries.name).insert_many(docs[first:first + 2000])


async def _caught_up(db: Db) -> int:
    ring = MasterKeyring.generate()
    config = SequencerConfig(1.0, 0.5, 60.0, 10_000, 3600.0, "bench.example/audit")
    running = Sequencer(db, lambda: current_signer(db, ring, config.origin), config, "bench")
    total = await running.round()  # the first: its plan, and its first windows
    while running.backlog is not None:
        total += await running.round()
    return total


async def _deleted(db: Db, store: BlobStore, account_id: str, file_id: str, links: int) -> int:
    await deletions.delete_file(db, store, account_id, file_id, "bench")
    return links + 1


async def _cleaned(links: int) -> int:
    await background.settled()
    return links + 1


def table(times: dict[str, list[float]], took: dict[str, Work]) -> str:
    rows = ["| work | records | seconds | operations | p50 ms | p99 ms | max ms | over 50 ms |",
            "|---|---|---|---|---|---|---|---|"]
    for label, durations in times.items():
        ordered = sorted(durations)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        slow = sum(1 for d in ordered if d > SLOW_MS)
        rows.append(f"| {label} | {took[label].records:,} | {took[label].seconds:.1f} | "
                    f"{len(ordered):,} | "
                    f"{statistics.median(ordered):.1f} | {p99:.1f} | {ordered[-1]:.1f} | {slow} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=20_000)
    parser.add_argument("--load", type=int, default=0)
    parser.add_argument("--revoke-call-only", action="store_true")
    parser.add_argument("--revoke-only", action="store_true")
    parser.add_argument("--catch-up-only", action="store_true")
    parser.add_argument("--rest", type=float, default=10.0)
    parser.add_argument("--mark-for", type=float, default=None)
    args = parser.parse_args()
    collector.settle()  # this process stands for vaultd's, which settles it as it starts
    if args.revoke_only:
        with tempfile.TemporaryDirectory(prefix="bench-bulk-") as work:
            times, took, bystander = asyncio.run(run_revoke_only(
                args.links, args.rest, Path(work) / "db", args.mark_for))
        print(table(times, took))
        print()
        print(bystander_table(bystander))
        return
    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as work:
        times, took = asyncio.run(run(args.links, args.load, Path(work) / "db",
                                      args.revoke_call_only, args.catch_up_only))
    print(table(times, took))


if __name__ == "__main__":
    main()

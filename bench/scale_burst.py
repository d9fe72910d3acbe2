"""The file listing after an import's burst: `python -m bench.scale_burst --files 100000`;
every listed read on the burst shape: `python -m bench.scale_burst --shapes 100000`.

A fresh embedded SecantusDB with vaultd's indexes gets one account whose `--files` files were
stored within one minute a month ago (an import, then a quiet month), in the records and
counters an upload writes (`tests.scale_seed`'s shapes: each file numbered in its account).
Then `services.files.files.list_files` is called as `GET /v1/files` calls it, `--rounds` times
for each page asked, timed at the service (HTTP adds about 2 ms), beside the same pages of an
account with no file. Prints a Markdown table: p50 and p95 in ms, the documents the
database walked for the page (`tests.db_reads`: each query replayed as an `explain`) and the
longest single database operation of those calls (as the driver's monitoring times it).

`--shapes N` seeds `tests.scale_shapes`' burst shape instead (N records of each kind within
half a minute a month ago: files, links on one file, log entries on it, a link's viewer
sessions, activity events, one person's sessions, one endpoint's deliveries, a room's links)
and prints, for every read of `tests.scale_shapes.READS`, what it returned, what it walked, the
ratio (`tests/test_scale_shapes.py` holds it at 2 on 1,000), its p50 / p95 and the longest
single operation.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from pymongo import monitoring

from tests.db_reads import QueryRecorder, total_examined
from tests.embedded_database import recorded_db, running_database
from tests.scale_shapes import READS, seed_shape
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.files import files
from vaultd.timefmt import utcnow

BATCH = 2000  # files per insert_many
PAGES = ((1, 25), (1, 100), (10, 25), (41, 100))


class OperationTimes(QueryRecorder):
    """The queries, as `QueryRecorder`, and every command's duration (ms) while `timing`."""

    timing: bool = False
    durations: list[float]

    def __init__(self) -> None:
        super().__init__()
        self.durations = []

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if self.timing:
            self.durations.append(event.duration_micros / 1000)


async def _imported(db: Db, name: str, count: int) -> str:
    account = await accounts.create_account(db, name, "business")
    ended = utcnow() - timedelta(days=30)
    for first in range(0, count, BATCH):
        docs: list[dict[str, Any]] = []
        for place in range(first, min(first + BATCH, count)):
            file_id = str(uuid.uuid4())
            docs.append({
                "_id": file_id, "accountId": account.id, "name": f"{file_id[:8]}.pdf",
                "kind": "delivery", "contentType": "application/pdf", "size": 1000,
                "pageCount": 3, "state": "stored", "seq": place + 1,
                "createdAt": ended - timedelta(minutes=1) * (1 - place / count),
                "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}}})
        await db.raw(db.files.name).insert_many(docs, ordered=False)
    await db.accounts.update_one({"_id": account.id}, {"$set": {
        "createdAt": utcnow() - timedelta(days=365), "usage.documents": count,
        "fileSeq": count}})
    return account.id


async def _measure(db: Db, recorder: OperationTimes, account_id: str, page: int,
                   per_page: int, rounds: int) -> tuple[float, float, int, float]:
    times = []
    recorder.durations.clear()
    recorder.timing = True
    for _ in range(rounds):
        started = time.perf_counter()
        await files.list_files(db, account_id, page, per_page)
        times.append((time.perf_counter() - started) * 1000)
    recorder.timing = False
    recorder.queries.clear()
    recorder.recording = True
    await files.list_files(db, account_id, page, per_page)
    recorder.recording = False
    read = await total_examined(db, list(recorder.queries))
    return (statistics.median(times), statistics.quantiles(times, n=20)[18], read,
            max(recorder.durations))


async def run(count: int, rounds: int, storage: Path) -> list[str]:
    recorder = OperationTimes()
    rows = ["| page | empty: p50 / p95 ms | walked | after the import: p50 / p95 ms | walked"
            " | longest operation ms |", "|---|---|---|---|---|---|"]
    with running_database(storage) as server:
        async with recorded_db(server, recorder) as db:
            empty = await _imported(db, "Empty Co", 0)
            started = time.perf_counter()
            full = await _imported(db, "Import Co", count)
            print(f"seeded {count:,} files in {time.perf_counter() - started:.0f} s")
            for page, per_page in PAGES:
                base = await _measure(db, recorder, empty, page, per_page, rounds)
                after = await _measure(db, recorder, full, page, per_page, rounds)
                rows.append(f"| page {page}, perPage {per_page} | {base[0]:.1f} / {base[1]:.1f}"
                            f" | {base[2]} | {after[0]:.1f} / {after[1]:.1f} | {after[2]}"
                            f" | {after[3]:.1f} |")
    return rows


async def shapes(burst: int, rounds: int, storage: Path) -> list[str]:
    recorder = OperationTimes()
    rows = [f"| read ({burst:,} in one burst) | returned | walked | ratio | p50 / p95 ms"
            " | longest operation ms |", "|---|---|---|---|---|---|"]
    with running_database(storage) as server:
        async with recorded_db(server, recorder) as db:
            started = time.perf_counter()
            shape = await seed_shape(db, burst)
            print(f"seeded the shape in {time.perf_counter() - started:.0f} s")
            for name, (read, returned) in READS.items():
                times = []
                recorder.durations.clear()
                recorder.timing = True
                for _ in range(rounds):
                    began = time.perf_counter()
                    await read(db, shape)
                    times.append((time.perf_counter() - began) * 1000)
                recorder.timing = False
                recorder.queries.clear()
                recorder.recording = True
                count = len(returned(await read(db, shape)))
                recorder.recording = False
                walked = await total_examined(db, list(recorder.queries))
                rows.append(f"| {name} | {count} | {walked:,} | {walked / max(count, 1):.1f}x"
                            f" | {statistics.median(times):.1f} / "
                            f"{statistics.quantiles(times, n=20)[18]:.1f}"
                            f" | {max(recorder.durations):.1f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--shapes", type=int, default=0,
                        help="seed the burst shape of every listed read, this many of each")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as storage:
        work = (shapes(args.shapes, args.rounds, Path(storage) / "db") if args.shapes
                else run(args.files, args.rounds, Path(storage) / "db"))
        print("\n".join(asyncio.run(work)))


if __name__ == "__main__":
    main()

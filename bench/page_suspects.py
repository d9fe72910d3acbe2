"""The suspects of the page path's regression (docs/performance.md), each measured alone in CPU
seconds against the same work without it, in blocks that alternate so both see the same
machine (wall-clock time is noise on a shared machine; CPU time much less so).

    python -m bench.page_suspects            # 2,000 operations each way, about a minute

- the access log's two indexes added last round (`fileId, action, at` and the sparse
  `roomId, at`): a page's entry inserted into the log with every index, against a copy of the
  log with the indexes it had before; the database process's CPU per insert;
- the command listener behind the database round-trip histogram (`metrics.database`): a page's
  link read (`find_one` by id) from a client with it registered, against one without; the
  client process's CPU per command;
- the per-request deadline (`pymongo.timeout`, sent as `maxTimeMS`): the same read inside one,
  against none; the client's and the database's CPU per command.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pymongo
from pymongo import ASCENDING, DESCENDING, AsyncMongoClient

from bench.server import cpu_seconds
from vaultd import embedded_db
from vaultd.db import Db
from vaultd.db_indexes import ensure_indexes
from vaultd.metrics.database import CommandTimer
from vaultd.metrics.registry import Metrics
from vaultd.services.pages.db_indexes import RENDER_ID_INDEX
from vaultd.timefmt import utcnow

BLOCK = 100  # operations per block; blocks of the two sides alternate
Operation = Callable[[], Awaitable[Any]]


def _entry() -> dict[str, Any]:
    """A page's log entry, as `services.common.access_log.record` writes it."""
    return {"_id": str(uuid.uuid4()), "accountId": "a" * 36, "fileId": "f" * 36,
            "action": "page", "at": utcnow(), "viewerEmail": "ann.lee@client.example",
            "ip": "203.0.113.7", "page": 3, "viewerName": "Ann Lee",
            "renderId": uuid.uuid4().hex[:16]}


async def _alternate(count: int, sides: dict[str, Operation], pids: dict[str, int]
                     ) -> dict[str, dict[str, float]]:
    """CPU milliseconds per operation, per side and per process ("client" is this one)."""
    spent = {side: dict.fromkeys([*pids, "client"], 0.0) for side in sides}
    for _ in range(count // BLOCK):
        for side, operation in sides.items():
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            mine = time.process_time()
            for _ in range(BLOCK):
                await operation()
            spent[side]["client"] += time.process_time() - mine
            for name, pid in pids.items():
                spent[side][name] += cpu_seconds(pid) - before[name]
    done = count // BLOCK * BLOCK
    return {side: {name: seconds / done * 1000 for name, seconds in by.items()}
            for side, by in spent.items()}


async def measure(uri: str, database_pid: int, count: int) -> dict[str, dict[str, float]]:
    timed: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        uri, event_listeners=[CommandTimer(Metrics())])
    plain: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri)
    db = Db(plain, plain["vaultd"])
    await ensure_indexes(db)
    before_round = plain["vaultd"]["access_log_before"]  # the indexes the log had before
    await before_round.create_index([("fileId", ASCENDING), ("at", DESCENDING)])
    await before_round.create_index([("accountId", ASCENDING), ("at", DESCENDING)])
    await before_round.create_index(
        [("accountId", ASCENDING), ("renderId", ASCENDING)], name=RENDER_ID_INDEX, unique=True,
        partialFilterExpression={"action": "page", "renderId": {"$exists": True}})
    link = {"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex, "revoked": False}
    await plain["vaultd"]["links"].insert_one(link)
    pids = {"database": database_pid}
    results: dict[str, dict[str, float]] = {}

    async def with_deadline() -> Any:
        with pymongo.timeout(2.0):
            return await plain["vaultd"]["links"].find_one({"_id": link["_id"]})

    try:
        results.update(await _alternate(count, {
            "log entry, every index": lambda: db.access_log.insert_one(_entry()),  # type: ignore[arg-type]
            "log entry, the indexes before": lambda: before_round.insert_one(_entry()),
        }, pids))
        results.update(await _alternate(count, {
            "link read, listener": lambda: timed["vaultd"]["links"].find_one(
                {"_id": link["_id"]}),
            "link read, no listener": lambda: plain["vaultd"]["links"].find_one(
                {"_id": link["_id"]}),
            "link read, deadline": with_deadline,
        }, pids))
    finally:
        await timed.close()
        await plain.close()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.page_suspects", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000, help="operations each way")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vaultd-suspects-") as work:
        server = embedded_db.start(Path(work) / "db", record_address=False)
        try:
            results = asyncio.run(measure(server.uri, server.process.pid, args.count))
        finally:
            server.stop()
    print("| operation | client CPU ms | database CPU ms |\n| --- | --- | --- |")
    for side, by in results.items():
        print(f"| {side} | {by['client']:.3f} | {by['database']:.3f} |")


if __name__ == "__main__":
    main()

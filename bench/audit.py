"""The audit log's two figures (docs/audit.md, "Measurements"): how many entries a second the
sequencer sequences, and how long a proof takes at 10^6 entries. On a real embedded SecantusDB.

    python -m bench.audit                       # 20,000 entries sequenced; proofs at 10^6
    python -m bench.audit --entries 5000 --tree 100000   # a quick run
    python -m bench.audit --entries 30000 --tree 0 --profile   # where a round's time goes

The sequencer is timed over rounds that each find a full merge window of entries (the default
second's worth at 5,000 a second), inserted before it as vaultd inserts them (stamped as they
are written, marked for the log fence, in chunks), a merge delay after the previous round
began at the earliest, as the sequencer's loop runs. Rounds before the late-arrival window has
passed once are not timed: until then no stretch has had its last look, which every later
round gives, as under a steady 5,000 a second. `--late` sets `audit.late_arrival_seconds`.
The proof tree is written straight as nodes (what the sequencer writes for 10^6 entries,
without the hours), then inclusion and consistency proofs are asked for at random and timed,
as the route reads them. `--profile`: the database time of each kind of command the timed
rounds sent, from a pymongo command listener.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, monitoring

from tests.embedded_database import running_database
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.records.audit import AuditTreeDoc
from vaultd.services.audit import blocks, merkle, tree_store
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.settings.audit import AuditSettings
from vaultd.timefmt import utcnow

BATCH = 10_000
INSERT_CHUNK = 500  # a loaded machine's database must answer each insert within the timeout
MERGE_DELAY = 1.0


class CommandTimes(monitoring.CommandListener):
    """Seconds spent per command and collection while `on` (the database's answer time, as the
    driver sees it)."""

    def __init__(self) -> None:
        self.on = False
        self.names: dict[int, str] = {}
        self.spent: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)

    def started(self, event: monitoring.CommandStartedEvent) -> None:  # type: ignore[override]
        target = event.command.get(event.command_name)
        name = f"{event.command_name} {target if isinstance(target, str) else ''}".strip()
        self.names[event.request_id] = name

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:  # type: ignore[override]
        self._done(event.request_id, event.duration_micros)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:  # type: ignore[override]
        self._done(event.request_id, event.duration_micros)

    def _done(self, request_id: int, micros: int) -> None:
        name = self.names.pop(request_id, "?")
        if self.on:
            self.spent[name] += micros / 1e6
            self.count[name] += 1


async def sequencer_rate(db: Db, entries: int, per_round: int, late: float,
                         times: CommandTimes | None = None) -> float:
    ring = MasterKeyring.generate()
    config = SequencerConfig(MERGE_DELAY, late, 60.0, 1000, 60.0, "bench.example/audit")
    sequencer = Sequencer(db, lambda: current_signer(db, ring, config.origin), config, "bench")
    await sequencer.round()  # takes the lease
    accounts = [str(uuid.uuid4()) for _ in range(20)]
    spent, done, rounds = 0.0, 0, 0
    timed_from = time.monotonic() + late + 2 * MERGE_DELAY
    last = time.monotonic()
    while done < entries:
        for _ in range(0, per_round, INSERT_CHUNK):
            stamp = utcnow()  # as access_log.record stamps each entry before its insert
            await db.access_log.insert_many([
                {"_id": str(uuid.uuid4()), "accountId": random.choice(accounts),
                 "fileId": "f", "action": "page", "page": n % 30 + 1, "ip": "203.0.113.7",
                 "viewerEmail": "v@client.example", "at": stamp + timedelta(microseconds=n),
                 "fenced": True} for n in range(INSERT_CHUNK)])
        await asyncio.sleep(max(0.0, last + MERGE_DELAY - time.monotonic()))
        last = time.monotonic()
        timed = last >= timed_from
        if times is not None:
            times.on = timed
        began = time.perf_counter()
        sequenced = await sequencer.round()
        if times is not None:
            times.on = False
        if timed:
            spent += time.perf_counter() - began
            done, rounds = done + sequenced, rounds + 1
    if times is not None:
        for name, seconds in sorted(times.spent.items(), key=lambda item: -item[1]):
            print(f"  {name}: {seconds / rounds:.3f} s a round ({times.count[name] / rounds:.1f} "
                  "commands)")
    return done / spent


async def write_tree(db: Db, account_id: str, size: int) -> None:
    frontier: list[tuple[int, bytes]] = []
    closed: list[tuple[int, int, bytes]] = []
    keys: list[str] = []
    hashes: list[bytes] = []
    pieces: list[int] = []
    for index in range(size):
        keys.append(f"access:{index}")
        hashes.append(merkle.leaf_hash(index.to_bytes(8, "big")))
        merkle.append(frontier, index, hashes[-1], closed)
        if len(keys) >= BATCH or index == size - 1:
            first = index + 1 - len(keys)
            tree: AuditTreeDoc = {"_id": account_id, "size": first, "root": b"", "frontier": [],
                                  "checkpointSize": 0, "checkpointAt": None, "epoch": 1,
                                  "pieces": pieces}
            parts = blocks.segments(account_id, first, keys, hashes)
            await blocks.write(db, [(tree, parts)], 1)
            pieces = blocks.starts_after(tree, parts)
            nodes = [{"_id": tree_store.node_id(account_id, level, i), "hash": h, "epoch": 1}
                     for level, i, h in closed if level >= blocks.BLOCK_LEVEL]
            if nodes:
                await db.audit_nodes.insert_many(nodes, ordered=False)
            closed, keys, hashes = [], [], []
    await db.audit_trees.insert_one({
        "_id": account_id, "size": size, "root": merkle.frontier_root(frontier),
        "frontier": [[level, h] for level, h in frontier], "checkpointSize": 0,
        "checkpointAt": None, "epoch": 1, "pieces": pieces})


async def proof_times(db: Db, account_id: str, size: int, samples: int) -> dict[str, Any]:
    inclusion, consistency = [], []
    for _ in range(samples):
        began = time.perf_counter()
        await tree_store.inclusion(db, account_id, random.randrange(size), None)
        inclusion.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        await tree_store.consistency(db, account_id, random.randrange(1, size), None)
        consistency.append((time.perf_counter() - began) * 1000)
    return {name: (statistics.median(times), statistics.quantiles(times, n=20)[18])
            for name, times in (("inclusion", inclusion), ("consistency", consistency))}


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, running_database(Path(tmp) / "db") as server:
        # A loaded machine's database may take longer than vaultd's socket timeout per command.
        uri = server.uri + "&socketTimeoutMS=300000"
        times = CommandTimes() if args.profile else None
        if times is None:
            db = connect(uri, "vaultd")
        else:
            client: AsyncMongoClient[Any] = AsyncMongoClient(
                uri, tz_aware=True, uuidRepresentation="standard", event_listeners=[times])
            db = Db(client, client["vaultd"])
        await ensure_indexes(db)
        try:
            rate = await sequencer_rate(db, args.entries, args.per_round, args.late, times)
            print(f"sequencer: {rate:,.0f} entries/s ({args.entries:,} entries, rounds of "
                  f"{args.per_round:,})")
            if not args.tree:
                return
            began = time.perf_counter()
            await write_tree(db, "proofs", args.tree)
            print(f"tree of {args.tree:,} leaves written in {time.perf_counter() - began:.0f} s")
            for name, (p50, p95) in (await proof_times(db, "proofs", args.tree, 200)).items():
                print(f"{name} proof at {args.tree:,}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        finally:
            await db.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--per-round", type=int, default=5_000)
    parser.add_argument("--tree", type=int, default=1_000_000, help="0: no proofs")
    parser.add_argument("--late", type=float, default=AuditSettings.audit_late_arrival_seconds,
                        help="audit.late_arrival_seconds (default: the setting's)")
    parser.add_argument("--profile", action="store_true",
                        help="the database time of each kind of command a round sends")
    asyncio.run(main(parser.parse_args()))

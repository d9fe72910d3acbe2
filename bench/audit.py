"""The audit log's two figures (docs/audit.md, "Measurements"): how many entries a second the
sequencer sequences, and how long a proof takes at 10^6 entries. On a real embedded SecantusDB.

    python -m bench.audit                       # 20,000 entries sequenced; proofs at 10^6
    python -m bench.audit --entries 5000 --tree 100000   # a quick run

The sequencer is timed over rounds that each find a full merge window of entries (the default
second's worth at 5,000 a second), inserted beforehand as vaultd inserts them, their times a
second apart per round, so each round also reads again the late-arrival window behind its
cursor (5 s: five rounds' worth), as it does under a steady 5,000 a second. The proof tree is
written straight as nodes (what the sequencer writes for 10^6 entries, without the hours), then
inclusion and consistency proofs are asked for at random and timed, as the route reads them.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.embedded_database import running_database
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.records.audit import AuditTreeDoc
from vaultd.services.audit import blocks, merkle, tree_store
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.timefmt import utcnow

BATCH = 10_000
INSERT_CHUNK = 500  # a loaded machine's database must answer each insert within the timeout


async def sequencer_rate(db: Db, entries: int, per_round: int) -> float:
    ring = MasterKeyring.generate()
    config = SequencerConfig(1.0, 5.0, 60.0, 1000, 60.0, "bench.example/audit")
    sequencer = Sequencer(db, lambda: current_signer(db, ring, config.origin), config, "bench")
    await sequencer.round()  # takes the lease
    accounts = [str(uuid.uuid4()) for _ in range(20)]
    spent, done, start = 0.0, 0, utcnow() - timedelta(seconds=entries // per_round + 10)
    step = timedelta(seconds=config.merge_delay_seconds) / per_round
    while done < entries:
        docs = [{"_id": str(uuid.uuid4()), "accountId": random.choice(accounts),
                 "fileId": "f", "action": "page", "page": n % 30 + 1, "ip": "203.0.113.7",
                 "viewerEmail": "v@client.example",
                 "at": start + step * (done + n)} for n in range(per_round)]
        for first in range(0, len(docs), INSERT_CHUNK):
            await db.access_log.insert_many(docs[first:first + INSERT_CHUNK])
        began = time.perf_counter()
        done += await sequencer.round()
        spent += time.perf_counter() - began
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
        db = connect(server.uri + "&socketTimeoutMS=300000", "vaultd")
        await ensure_indexes(db)
        try:
            rate = await sequencer_rate(db, args.entries, args.per_round)
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
    asyncio.run(main(parser.parse_args()))

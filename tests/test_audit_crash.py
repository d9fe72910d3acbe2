"""The sequencer under SIGKILL: two vaultd processes on one database, entries written without a
pause, one process or the other killed at random moments and restarted. Afterwards every entry
has exactly one index, the indexes run 0..n-1 without a gap, an index once committed never
changed, and the export verifies; entries whose writer stalled past their last look among them.

The seed is printed (`-s` shows it); `CRASH_SEED=<n>` replays a run's choices.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.audit_helpers import checkpoint_of, fetch_export, problems
from tests.embedded_database import running_database
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd import embedded_db
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.services.accounts import accounts, api_keys
from vaultd.services.audit.blocks import BLOCK_SIZE
from vaultd.services.common import access_log, log_fence
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # kills and restarts its own vaultd processes

KILLS = 6
ENV = {"VAULTD_AUDIT_MERGE_DELAY_SECONDS": "0.05", "VAULTD_AUDIT_LEASE_SECONDS": "2",
       "VAULTD_AUDIT_CHECKPOINT_EVERY_ENTRIES": "50",
       "VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS": "0.2",
       "VAULTD_RENDER_WORKERS": "1"}
STALL = 6.0  # past audit.late_arrival_seconds (0.5 s by default): the entry lands after its look


class Writer(threading.Thread):
    """Writes access-log entries as vaultd does, for two accounts, until stopped; and about
    once a second one whose writer stalls between stamping it and inserting it for longer
    than `audit.late_arrival_seconds`, so that it lands after its last look."""

    def __init__(self, uri: str, account_ids: list[str], rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.uri, self.account_ids, self.rng = uri, account_ids, rng
        self.written: dict[str, list[str]] = {account: [] for account in account_ids}
        self.stamped: dict[str, datetime] = {}  # the stalled entries: their first stamps
        self.halt = threading.Event()
        self.began = time.monotonic()

    def run(self) -> None:
        asyncio.run(self._write())

    async def _write(self) -> None:
        db = connect(self.uri, "vaultd")
        stalls: list[asyncio.Task[None]] = []
        try:
            while not self.halt.is_set():
                account = self.rng.choice(self.account_ids)
                if len(stalls) < time.monotonic() - self.began:
                    stalls.append(asyncio.create_task(self._stalled(db, account)))
                for _ in range(self.rng.randint(1, 40)):
                    entry = await access_log.record(db, account, "file-1", "page", page=1,
                                                    viewer_email="w@client.example")
                    self.written[account].append(entry)
                await asyncio.sleep(self.rng.random() * 0.02)  # pacing, not a wait
            await asyncio.gather(*stalls)
        finally:
            await db.close()

    async def _stalled(self, db: Db, account: str) -> None:
        entry = {"_id": str(uuid.uuid4()), "accountId": account, "fileId": "file-1",
                 "action": "page", "page": 2, "viewerEmail": "stalled@client.example",
                 "at": utcnow()}  # stamped as access_log.record stamps it
        await asyncio.sleep(STALL)  # the stall itself (a paused process), not a wait
        await log_fence.insert(db, "access_log", entry)
        self.written[account].append(entry["_id"])
        self.stamped[entry["_id"]] = entry["at"]


def run(uri: str, work: Any) -> Any:
    async def main() -> Any:
        db = connect(uri, "vaultd")
        try:
            return await work(db)
        finally:
            await db.close()
    return asyncio.run(main())


async def committed(db: Db) -> dict[str, int]:
    """Every committed index: source key -> index (what a checkpoint may already have signed)."""
    sizes = {tree["_id"]: tree["size"] async for tree in db.audit_trees.find({})}
    return {key: piece["block"] * BLOCK_SIZE + piece["start"] + position
            async for piece in db.audit_pieces.find({})
            for position, key in enumerate(piece["keys"])
            if piece["block"] * BLOCK_SIZE + piece["start"] + position
            < sizes.get(piece["accountId"], 0)}


@pytest.fixture
def database(tmp_path: Path) -> Iterator[embedded_db.EmbeddedServer]:
    with running_database(tmp_path / "db") as server:
        run(server.uri, ensure_indexes)
        yield server


def kill(server: VaultProcess) -> None:
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(10)


@pytest.mark.timeout(900)  # six kills, restarts and a lease each on a shared machine
def test_killed_sequencers_leave_no_gap_duplicate_or_reorder(
        database: embedded_db.EmbeddedServer, tmp_path: Path) -> None:
    seed = int(os.environ.get("CRASH_SEED", random.randrange(10**6)))
    print(f"CRASH_SEED={seed}")
    rng = random.Random(seed)

    async def make_accounts(db: Db) -> list[tuple[str, str]]:
        made = []
        for name in ("Crash A", "Crash B"):
            account = await accounts.create_account(db, name, "business")
            made.append((account.id, (await api_keys.create_key(db, account.id))[1]))
        return made
    made = run(database.uri, make_accounts)
    env = {**ENV, "VAULTD_MASTER_KEY": MasterKeyring.generate().serialize(one_line=True),
           "VAULTD_MONGODB_URI": database.uri}
    servers = [VaultProcess(tmp_path / name, env=dict(env)).start() for name in ("a", "b")]
    writer = Writer(database.uri, [account for account, _ in made], rng)
    writer.start()
    snapshots: list[dict[str, int]] = []
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.2, 1.5))  # the random moment the kill lands
            victim = rng.choice(servers)
            kill(victim)
            snapshots.append(run(database.uri, committed))
            victim.start()
        writer.halt.set()
        writer.join(30)
        for account, key in made:
            count = len(writer.written[account])
            with servers[0].client(key) as api:
                checkpoint_of(api, count)
                export = fetch_export(api, tmp_path / f"{account}.json")
            assert export["treeSize"] == count
            assert problems(export) == []
            exported = {item["id"]: item["index"] for item in export["entries"]}
            assert sorted(exported) == sorted(writer.written[account])  # each once, none lost
            assert sorted(exported.values()) == list(range(count))  # no gap, no repeat
        async def restamped(db: Db) -> int:  # refused by the fence and stamped again
            return sum([doc["at"] > writer.stamped[doc["_id"]] async for doc in
                        db.access_log.find({"_id": {"$in": list(writer.stamped)}})])
        assert writer.stamped and run(database.uri, restamped) > 0
        final = run(database.uri, committed)
        for snapshot in snapshots:  # an index once committed never moved
            assert {key: final[key] for key in snapshot} == snapshot
        assert sum(len(snapshot) for snapshot in snapshots) > 0
    finally:
        writer.halt.set()
        for server in servers:  # a graceful stop on a loaded machine may take its grace
            if server.process is not None and server.process.poll() is None:
                server.stop(timeout=120)
    wait_until(lambda: all(s.process is None or s.process.poll() is not None for s in servers),
               what="vaultd processes stopped")

"""The audit log's leaves in pieces and blocks (services.audit.blocks), on the real embedded
database: trees that cross block boundaries round after round prove every entry against roots
computed here from the entries alone; a round stopped between its writes and its commit leaves
nothing its successor keeps; a holder whose lease was taken over cannot overwrite; an entry
that lands late within `audit.late_arrival_seconds` still gets its index; a round of thousands
of entries (a catch-up's) writes its leaves a block a command."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pymongo import monitoring

from admin_cli import audit_verify
from tests.embedded_database import recorded_db, running_database, vault_db
from tests.waiting import wait_until_async
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.services.audit import blocks, leaves, merkle, tree_store
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Plan, Sequencer, SequencerConfig
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own database server

RING = MasterKeyring.generate()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Db]:
    with running_database(tmp_path / "db") as server:
        async with vault_db(server) as database:
            yield database


def sequencer(db: Db, holder: str, lease_seconds: float = 60.0) -> Sequencer:
    config = SequencerConfig(0.1, 5.0, lease_seconds, 10**6, 3600.0, "test.example/audit")
    return Sequencer(db, lambda: current_signer(db, RING, config.origin), config, holder)


async def write(db: Db, account_id: str, count: int, start: datetime) -> list[dict[str, object]]:
    docs: list[dict[str, object]] = [
        {"_id": f"{account_id}-{start.timestamp()}-{n}", "accountId": account_id,
         "fileId": "f", "action": "page", "page": n % 7 + 1,
         "at": start + timedelta(microseconds=1000 * n)} for n in range(count)]
    await db.raw("access_log").insert_many(docs)
    return docs


def expected(account_id: str, docs: list[dict[str, object]]) -> list[bytes]:
    """The leaf hashes of `docs` in order, from the entries alone (what a verifier computes)."""
    return [merkle.leaf_hash(leaves.encode("access", str(doc["_id"]), account_id,
                                           leaves.access_entry(doc)))  # type: ignore[arg-type]
            for doc in docs]


def root_of(hashes: list[bytes]) -> bytes:
    frontier: list[tuple[int, bytes]] = []
    for index, digest in enumerate(hashes):
        merkle.append(frontier, index, digest, [])
    return merkle.frontier_root(frontier)


async def proves_everything(db: Db, account_id: str, hashes: list[bytes]) -> None:
    size = len(hashes)
    tree = await tree_store.committed(db, account_id)
    assert tree["size"] == size
    assert bytes(tree["root"]) == root_of(hashes)
    edges = {0, size - 1, *(i for b in range(size // 256 + 1) for i in (256 * b - 1, 256 * b))}
    edges |= set(random.sample(range(size), min(20, size)))
    for index in sorted(i for i in edges if 0 <= i < size):
        proof = await tree_store.inclusion(db, account_id, index, None)
        assert proof["leafHash"] == hashes[index]
        assert audit_verify.verify_inclusion(index, size, hashes[index], proof["proof"],
                                             root_of(hashes))
    for first in sorted({1, 255, 256, 257, size // 2, size - 1} & set(range(1, size))):
        proof = await tree_store.consistency(db, account_id, first, None)
        assert audit_verify.verify_consistency(first, size, root_of(hashes[:first]),
                                               root_of(hashes), proof["proof"])


async def test_trees_across_block_boundaries_prove_every_entry(db: Db) -> None:
    worker = sequencer(db, "one")
    start = utcnow() - timedelta(seconds=60)
    written: dict[str, list[dict[str, object]]] = {"acct-a": [], "acct-b": []}
    for round_number, count in enumerate((1, 200, 55, 300, 3, 512, 40)):
        for account_id in written:
            moment = start + timedelta(seconds=round_number)
            written[account_id] += await write(db, account_id, count, moment)
        assert await worker.round() == 2 * count
    for account_id, docs in written.items():
        hashes = expected(account_id, docs)
        await proves_everything(db, account_id, hashes)
        size = len(docs)  # 1111: four complete blocks, each one document, and 87 leaves
        assert await db.audit_blocks.count_documents({"accountId": account_id}) == size // 256
        tree = await tree_store.committed(db, account_id)
        assert tree["pieces"] == [0, 47]  # the last block: 47 from the 512, then the 40
        for doc in random.sample(docs, 10):
            index = await tree_store.index_of(db, account_id, "access", str(doc["_id"]))
            assert index == docs.index(doc)
        other = "acct-b" if account_id == "acct-a" else "acct-a"
        with pytest.raises(Exception, match="no such entry"):
            await tree_store.index_of(db, other, "access", str(docs[0]["_id"]))


@dataclass
class LeafKeys(monitoring.CommandListener):
    """How many leaf keys each insert into the blocks and the pieces carried."""

    carried: list[int] = field(default_factory=list)

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "insert" and event.command["insert"] in ("audit_blocks",
                                                                           "audit_pieces"):
            self.carried.append(sum(len(doc.get("keys", ()))
                                    for doc in event.command.get("documents", [])))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


async def test_a_round_of_thousands_writes_its_leaves_a_block_a_command(
        tmp_path: Path) -> None:
    """Each leaf key is an entry of the `keys` index, which SecantusDB writes under its one
    lock: a round sequencing 2,000 of one account's entries (a catch-up's first round) inserts
    them `INSERT_KEYS` at most a command, and every entry still proves."""
    recorded = LeafKeys()
    with running_database(tmp_path / "db") as server:
        async with recorded_db(server, recorded) as database:
            docs = await write(database, "acct-big", 2_000, utcnow() - timedelta(seconds=60))
            assert await sequencer(database, "one").round() == 2_000
            await proves_everything(database, "acct-big", expected("acct-big", docs))
    # every leaf in a piece, then the seven blocks of 256 they complete, whole
    assert sum(recorded.carried) == 2_000 + 7 * 256
    assert max(recorded.carried) <= blocks.INSERT_KEYS < 7 * 256


class StoppedBeforeCommit(Exception):
    pass


class Stopped(Sequencer):
    """A holder that dies after its writes, before its commit (as a SIGKILL there would)."""

    async def _commit(self, plans: list[Plan]) -> None:
        raise StoppedBeforeCommit(plans[0].tree["_id"])


async def test_a_round_stopped_before_its_commit_leaves_nothing_its_successor_keeps(
        db: Db) -> None:
    start = utcnow() - timedelta(seconds=60)
    first = sequencer(db, "first", lease_seconds=0.5)
    kept = await write(db, "acct", 100, start)
    assert await first.round() == 100
    stopped = Stopped(db, first.signer, first.config, "first")
    stopped.epoch, stopped.dirty, stopped.seen = first.epoch, False, first.seen  # the same
    doomed = await write(db, "acct", 300, start + timedelta(seconds=1))
    with pytest.raises(StoppedBeforeCommit):
        await stopped.round()
    left = await db.audit_pieces.find_one({"_id": blocks.piece_id("acct", 0, 100)})
    assert left is not None and left["keys"][0] == f"access:{doomed[0]['_id']}"
    # Entries stamped before the doomed ones now come first: the successor's leaves at the
    # places the stopped round wrote differ from what it left there.
    earlier = await write(db, "acct", 20, start + timedelta(milliseconds=500))
    successor = sequencer(db, "second")

    async def took_over() -> bool:
        return await successor.round() > 0
    await wait_until_async(took_over, timeout=30, what="the successor's first round")
    order = kept + earlier + doomed
    await proves_everything(db, "acct", expected("acct", order))
    committed = await blocks.committed_indexes(
        db, [f"access:{doc['_id']}" for doc in order], {"acct": len(order)})
    assert committed == {f"access:{doc['_id']}": index for index, doc in enumerate(order)}

    # The stopped holder, back, cannot overwrite what its successor wrote under a newer lease.
    part = blocks.segments("acct", 100, ["access:forged"], [b"\0" * 32])
    with pytest.raises(blocks.BlockFenced):
        await blocks.write(db, [(await tree_store.committed(db, "acct"), part)], first.epoch)
    assert await first.round() == 0  # and it no longer holds the lease


async def test_an_entry_landing_late_within_the_window_is_still_sequenced(db: Db) -> None:
    worker = sequencer(db, "one")
    now = utcnow()
    on_time = await write(db, "acct", 10, now - timedelta(seconds=1))
    assert await worker.round() == 10
    later = await write(db, "acct", 5, now)
    assert await worker.round() == 5
    # Stamped before everything read so far, landing only now (its process stalled 3 s).
    late = await write(db, "acct", 1, now - timedelta(seconds=3))

    async def sequenced() -> bool:
        await worker.round()
        tree = await db.audit_trees.find_one({"_id": "acct"})
        return tree is not None and tree["size"] == 16
    await wait_until_async(sequenced, timeout=30, what="the late entry's index")
    await proves_everything(db, "acct", expected("acct", on_time + later + late))

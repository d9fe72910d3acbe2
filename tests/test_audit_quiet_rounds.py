"""Quiet rounds (services.audit.quiet): once a full round has left nothing behind, a round of an
idle sequencer reads each log once and sends nothing else; an entry that lands is sequenced by
the very next round and numbered once its horizon passes it; the full round comes back every
`FULL_EVERY`; the lease is renewed from a quiet round; and a holder paused past its lease,
whose successor has taken over, writes nothing from a quiet round or after it.

A real sequencer with the access log's numbering on a database of its own on the test
worker's SecantusDB, every command it sends recorded by the driver's monitoring.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from tests.audit_helpers import SentCommands
from tests.embedded_database import recorded_worker_db
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.services.audit import lease, quiet, tree_store
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import access_log, older_log_numbering

RING = MasterKeyring.generate()
ORIGIN = "test.example/audit"
LATE = 0.05  # audit.late_arrival_seconds: an entry is behind the horizon at once
ACCOUNT = "acct-quiet"
WRITES = ("insert", "update", "delete", "findAndModify", "collMod")


@pytest.fixture
def commands() -> SentCommands:
    return SentCommands()


@pytest.fixture
async def db(commands: SentCommands) -> AsyncIterator[Db]:
    async with recorded_worker_db("audit_quiet", commands) as database:
        yield database


def sequencer(db: Db, holder: str = "holder-1", lease_seconds: float = 60.0) -> Sequencer:
    config = SequencerConfig(0.05, LATE, lease_seconds, 1000, 3600.0, ORIGIN)
    running = Sequencer(db, lambda: current_signer(db, RING, ORIGIN), config, holder)
    running.numbering = older_log_numbering.LogNumbering(db)
    return running


async def recorded_round(running: Sequencer, commands: SentCommands) -> tuple[int, list[Any]]:
    commands.sent.clear()
    commands.on = True
    try:
        sequenced = await running.round()
    finally:
        commands.on = False
    return sequenced, [(name, collection) for name, collection, _ in commands.sent]


async def until_quiet(running: Sequencer) -> int:
    """Rounds, a merge delay apart, until one is quiet; what they sequenced."""
    sequenced, quiet_before = 0, running.watch.quiet_rounds
    for _ in range(300):
        sequenced += await running.round()
        if running.watch.quiet_rounds > quiet_before:
            return sequenced
        await asyncio.sleep(0.05)
    raise AssertionError("no round was ever quiet")


def writes(sent: list[Any]) -> list[Any]:
    return [(name, collection) for name, collection in sent if name in WRITES]


async def test_an_idle_round_reads_each_log_once_and_a_new_entry_is_sequenced_at_once(
        db: Db, commands: SentCommands) -> None:
    running = sequencer(db)
    await access_log.record(db, ACCOUNT, "file-q", "view")
    assert await until_quiet(running) == 1

    for _ in range(3):
        sequenced, sent = await recorded_round(running, commands)
        assert sequenced == 0
        assert sent == [("find", "access_log"), ("find", "activity")]

    entry_id = await access_log.record(db, ACCOUNT, "file-q", "download")
    sequenced, sent = await recorded_round(running, commands)
    assert sequenced == 1  # by the round right after it landed, not a later one
    assert ("update", "audit_trees") in writes(sent)  # the commit
    assert (await tree_store.committed(db, ACCOUNT))["size"] == 2
    # Full rounds until its horizon has passed the entry; the one that numbers it comes before
    # the rounds are quiet again.
    await until_quiet(running)
    entry = await db.access_log.find_one({"_id": entry_id})
    assert entry is not None and entry["fileSeq"] == 2


async def test_the_full_round_comes_back_and_the_lease_is_renewed_from_a_quiet_round(
        db: Db, commands: SentCommands, monkeypatch: pytest.MonkeyPatch) -> None:
    running = sequencer(db, lease_seconds=2.0)
    await access_log.record(db, ACCOUNT, "file-q", "view")
    await until_quiet(running)
    epoch = running.epoch

    await asyncio.sleep(1.1)  # past half the lease: a quiet round renews it
    quiet_before = running.watch.quiet_rounds
    sequenced, sent = await recorded_round(running, commands)
    assert sequenced == 0 and running.watch.quiet_rounds == quiet_before + 1
    assert writes(sent) == [("update", "audit_sequencer")]
    held = await db.audit_sequencer.find_one({"_id": lease.LEASE_ID})
    assert held is not None and held["epoch"] == epoch and held["holder"] == "holder-1"

    monkeypatch.setattr(quiet, "FULL_EVERY", timedelta(seconds=0.3))
    await asyncio.sleep(0.4)
    sequenced, sent = await recorded_round(running, commands)
    assert ("listCollections", 1) in sent  # the fences' horizons: a full round
    assert ("collMod", "access_log") in writes(sent)  # its fence moved on
    assert running.watch.quiet_rounds == quiet_before + 1


async def test_a_holder_paused_past_its_lease_writes_nothing_after_a_take_over(
        db: Db, commands: SentCommands) -> None:
    first = sequencer(db, "holder-1", lease_seconds=2.0)
    await access_log.record(db, ACCOUNT, "file-q", "view")
    await until_quiet(first)
    await asyncio.sleep(2.1)  # paused: its lease runs out
    second = sequencer(db, "holder-2", lease_seconds=2.0)
    assert await second.round() == 0 and second.epoch == first.epoch + 1

    await access_log.record(db, ACCOUNT, "file-q", "download")
    sequenced, sent = await recorded_round(first, commands)
    assert sequenced == 0
    assert writes(sent) == []  # neither a quiet round's renewal nor a full round's commit
    assert await second.round() == 1
    assert (await tree_store.committed(db, ACCOUNT))["size"] == 2

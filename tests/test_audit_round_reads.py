"""What one round of the audit sequencer asks the database, as vaultd runs it (the access
log's numbering behind its fence, `older_log_numbering.number_log`): the log fences' horizons
in one `listCollections`, and the numbering's record (its horizon, the older entries' walk)
read once, whatever the round numbers.

A real sequencer on a database of its own on the test worker's SecantusDB
(`tests.worker_database`), every command it sends recorded by the driver's monitoring.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.audit_helpers import SentCommands
from tests.embedded_database import recorded_worker_db
from tests.waiting import wait_until_async
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import access_log, older_log_numbering
from vaultd.services.common.numbered_log import HORIZON

RING = MasterKeyring.generate()
ORIGIN = "test.example/audit"
LATE = 0.05  # audit.late_arrival_seconds: short, so an entry is behind the horizon at once


@pytest.fixture
def commands() -> SentCommands:
    return SentCommands()


@pytest.fixture
async def db(commands: SentCommands) -> AsyncIterator[Db]:
    async with recorded_worker_db("audit_round_reads", commands) as database:
        yield database


def sequencer(db: Db) -> Sequencer:
    config = SequencerConfig(0.05, LATE, 60.0, 1000, 3600.0, ORIGIN)
    running = Sequencer(db, lambda: current_signer(db, RING, ORIGIN), config, "holder-1")
    running.numbering = older_log_numbering.LogNumbering(db)
    return running


async def recorded_round(running: Sequencer, commands: SentCommands) -> list[tuple[str, Any, Any]]:
    commands.sent.clear()
    commands.on = True
    try:
        await running.round()
    finally:
        commands.on = False
    return list(commands.sent)


async def walk_done(db: Db) -> bool:
    state: Any = await db.number_counters.find_one({"_id": HORIZON})
    return older_log_numbering.done(state)


def fence_reads(sent: list[tuple[str, Any, Any]]) -> int:
    return sum(1 for name, _, _ in sent if name == "listCollections")


def numbering_record_reads(sent: list[tuple[str, Any, Any]]) -> int:
    return sum(1 for name, collection, query in sent
               if name == "find" and collection == "number_counters"
               and query.get("_id") == HORIZON)


async def test_a_round_reads_the_fences_and_the_numbering_record_once(
        db: Db, commands: SentCommands) -> None:
    running = sequencer(db)
    await running.round()  # the first round marks where the numbers start
    await access_log.record(db, "acct-round", "file-round", "view")

    async def walked() -> bool:  # the older entries' walk goes back to its end in a step
        await running.round()
        return await walk_done(db)
    reached: bool = await wait_until_async(walked, timeout=30, what="the older entries' walk done")
    assert reached

    entry_id = await access_log.record(db, "acct-round", "file-round", "download")
    numbering_rounds: list[list[tuple[str, Any, Any]]] = []

    async def numbered() -> bool:
        numbering_rounds.append(await recorded_round(running, commands))
        entry = await db.access_log.find_one({"_id": entry_id})
        return entry is not None and "fileSeq" in entry
    reached = await wait_until_async(numbered, timeout=30, what="the new entry numbered by a round")
    assert reached

    entry = await db.access_log.find_one({"_id": entry_id})
    assert entry is not None and entry["fileSeq"] == 2  # after the first entry, in its file
    for sent in numbering_rounds:
        assert fence_reads(sent) == 1, sent
        assert numbering_record_reads(sent) == 1, sent
    # the round that numbered it wrote the numbers: the test saw a round at work
    assert any(name == "update" and collection == "access_log"
               for name, collection, _ in numbering_rounds[-1])

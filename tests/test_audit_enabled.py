"""`audit.enabled`: the composition root starts the audit log's sequencer only where it is on.

On the real embedded database: with the setting on (its default) an access-log entry written by
the page path's writer gets its index; with it off no sequencer starts, so no lease is taken."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.embedded_database import running_database, vault_db
from tests.waiting import wait_until_async
from vaultd.config import load_settings
from vaultd.db import Db
from vaultd.main import start_audit_sequencer
from vaultd.runtime import KeyringSource
from vaultd.services.common import access_log

pytestmark = pytest.mark.slow  # starts its own database server


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Db]:
    with running_database(tmp_path / "db") as server:
        async with vault_db(server) as database:
            yield database


async def test_the_sequencer_runs_by_default_and_sequences_a_page_entry(
        db: Db, tmp_path: Path) -> None:
    settings = load_settings({}, env={"VAULTD_DATA_DIR": str(tmp_path),
                                      "VAULTD_AUDIT_MERGE_DELAY_SECONDS": "0.1"})
    assert settings.audit_enabled is True
    entry_id = await access_log.record(db, "acct-on", "file-1", "page", page=1)
    sequencer = start_audit_sequencer(settings, db, KeyringSource(settings), "instance-on")
    assert sequencer is not None
    try:
        async def sequenced() -> bool:
            leaf = await db.audit_pieces.find_one({"keys": f"access:{entry_id}"})
            tree = await db.audit_trees.find_one({"_id": "acct-on"})
            return leaf is not None and tree is not None and tree["size"] == 1
        await wait_until_async(sequenced, timeout=30)
    finally:
        await sequencer.stop()


@pytest.mark.parametrize(("file_values", "env"), [
    ({}, {"VAULTD_AUDIT_ENABLED": "false"}),
    ({"audit.enabled": False}, {}),
])
async def test_off_no_sequencer_starts_and_no_entry_is_sequenced(
        db: Db, tmp_path: Path, file_values: dict[str, object], env: dict[str, str]) -> None:
    settings = load_settings(file_values, env={"VAULTD_DATA_DIR": str(tmp_path), **env})
    assert settings.audit_enabled is False
    await access_log.record(db, "acct-off", "file-1", "page", page=1)
    assert start_audit_sequencer(settings, db, KeyringSource(settings), "instance-off") is None
    assert await db.audit_sequencer.find_one({}) is None
    assert await db.audit_trees.find_one({"_id": "acct-off"}) is None

"""A vault restored into a database whose logs already carry the audit log's fence
(services.common.log_fence): a sequencer that ran on the target first left a validator that
refuses a writer's entries stamped before its horizon, which every backed-up entry is. The
restore writes them all the same (what it writes is what the backup verified), and the
restored vault's export verifies, holding every entry the original had signed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import WriteError

from tests.audit_helpers import (
    checkpoint_of,
    fetch_export,
    problems,
    record_activity,
    record_entries,
)
from tests.backup_helpers import secantus_server
from tests.vault_process import VaultProcess, running_vault
from vaultd.db import connect
from vaultd.services.common import log_fence
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd and database servers

AUDIT_ENV = {"VAULTD_AUDIT_MERGE_DELAY_SECONDS": "0.1",
             "VAULTD_AUDIT_CHECKPOINT_EVERY_ENTRIES": "5",
             "VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS": "0.5", "VAULTD_AUDIT_LEASE_SECONDS": "3"}


async def fence_target(uri: str, backed_up_entry: dict[str, Any]) -> int:
    """Fences the empty target's logs at now, as a sequencer's round would, and tries a
    backed-up entry as its writer wrote it (marked): the code it is refused with."""
    db = connect(uri, "vaultd")
    try:
        for collection in ("access_log", "activity"):
            await log_fence.raise_horizon(db, collection, utcnow())
        try:
            await db.raw("access_log").insert_one(backed_up_entry)
        except WriteError as refused:
            return refused.code
        return 0
    finally:
        await db.close()


def test_a_restore_into_fenced_logs_writes_every_entry_and_the_export_verifies(
        tmp_path: Path) -> None:
    with running_vault(tmp_path / "vault", own_database=True, **AUDIT_ENV) as vault:
        account_id, key = vault.new_account("Restore Co", "business")
        written = record_entries(vault, account_id, 12)
        record_activity(vault, account_id, 3)
        with vault.client(key) as api:
            checkpoint_of(api, 15)
            before = fetch_export(api, tmp_path / "before.json")
        assert problems(before) == []
        first = vault.run_service(lambda db: db.access_log.find_one({"_id": written[0]}))
        # A writer's entry; the access log's numbering drops its fence mark once it is
        # numbered behind the fence (common.log_numbering): the probe below carries it again.
        assert first is not None
        vault.admin_json("backup", str(tmp_path / "backup"))
        key_file = vault.data_dir / "master.key"

    with secantus_server(tmp_path / "mongo") as uri:
        env = {"VAULTD_MONGODB_URI": uri, **AUDIT_ENV}
        entry = {**first, "_id": "probe", log_fence.FENCED: True}
        refused = asyncio.run(fence_target(uri, entry))
        assert refused == log_fence.DOCUMENT_VALIDATION_FAILURE  # the fence is in force
        target = VaultProcess(tmp_path / "moved", env=env)
        report = target.admin_json("restore", str(tmp_path / "backup"), "--master-key-file",
                                   str(key_file))
        assert report["collections"]["access_log"] == len(written)
        with running_vault(tmp_path / "moved", own_database=True, **env) as moved, \
                moved.client(key) as api:
            checkpoint_of(api, before["treeSize"])
            after = fetch_export(api, tmp_path / "after.json")
            assert problems(after) == []
            assert problems(after, since=before) == []  # the same log, grown at most
            ids = [item["id"] for item in after["entries"]]
            assert ids[:len(before["entries"])] == [item["id"] for item in before["entries"]]
            assert set(written) <= set(ids)
            assert all(item["entry"] is not None for item in after["entries"])  # none lost

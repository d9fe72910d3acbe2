"""An upload whose reservation another vaultd's recovery cancelled while it worked (this process
was taken for dead: no heartbeat for DEAD_AFTER_SECONDS, as a paused machine) leaves nothing:
503 with the reason, no file record, no event, the usage as before. So no number the file
listing remembers as empty (`services.files.file_gaps`) ever holds a file, and no record
points at the blob recovery deleted. The cancellation is recovery's own step for a pending
upload whose owner is not among the live instances (`recovery._settle_upload`, as
`recovery.recover` runs it), run right after the reservation."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from backends.local import LocalBackend
from tests import render_fixtures as fx
from tests.http_helpers import created, upload
from tests.vault_process import VaultProcess
from vaultd.services.accounts import quota
from vaultd.services.files import uploads
from vaultd.services.storage import recovery


def _taken_for_dead(monkeypatch: pytest.MonkeyPatch, blobs: Path) -> None:
    """Each reservation is followed at once by a recovery that takes its owner for dead: it
    cancels the reservation and deletes the upload's blob (not committed yet: nothing to
    delete, so the upload commits it after; the upload's own clean-up removes it)."""
    reserve = quota.reserve_upload
    store = SimpleNamespace(backend=LocalBackend(blobs))  # what recovery reads of the store

    async def reserved_then_recovered(db: Any, account_id: str, file_id: str, size: int,
                                      owner: str) -> int:
        seq = await reserve(db, account_id, file_id, size, owner)
        account = await db.accounts.find_one({"_id": account_id}, {"pendingUploads": 1})
        pending = next(entry for entry in account["pendingUploads"] if entry["id"] == file_id)
        await recovery._settle_upload(db, store, account_id, pending)
        return seq

    monkeypatch.setattr(uploads.quota, "reserve_upload", reserved_then_recovered)


def _blobs(vault: VaultProcess) -> set[str]:
    return {path.name for path in (vault.data_dir / "blobs").iterdir()
            if not path.name.startswith(".")}


def test_an_upload_cancelled_by_recovery_answers_503_and_leaves_no_file(
        vault: VaultProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    _, key = vault.new_account("Paused Machine Co")
    with vault.client(key) as api:
        created(api.post("/webhooks", json={"url": "https://hooks.example.com/in",
                                            "events": ["file.uploaded"]}))
        before = api.get("/account").json()["usage"]
        blobs = _blobs(vault)
        _taken_for_dead(monkeypatch, vault.data_dir / "blobs")
        answer = upload(api, fx.text_pdf(2))
        monkeypatch.undo()
        assert answer.status_code == 503, answer.text
        assert answer.json() == {"error": uploads.CANCELLED}
        assert api.get("/files").json() == {"files": [], "total": 0}
        assert api.get("/account").json()["usage"] == before

    async def leftovers(db: Any) -> tuple[int, int, list[Any]]:
        account = await db.accounts.find_one({"name": "Paused Machine Co"})
        records = await db.files.count_documents({"accountId": account["_id"]})
        events = await db.webhook_outbox.count_documents({"accountId": account["_id"]})
        return records, events, account["pendingUploads"]

    assert vault.run_service(leftovers) == (0, 0, [])
    assert _blobs(vault) == blobs  # the blob it committed removed with the rest
    with vault.client(key) as api:  # the next upload, not cancelled, is stored and announced
        assert upload(api, fx.text_pdf(2)).status_code == 201
        assert api.get("/files").json()["total"] == 1
    assert vault.run_service(leftovers)[:2] == (1, 1)


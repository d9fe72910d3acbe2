"""The access log's numbers in a running vaultd: its audit sequencer numbers each entry after
its insert (`services.common.log_numbering`), and `GET /v1/files/:id/access-log` reads the
numbered entries by number and the newer ones by time, every entry once, newest first, with
`before` reaching the older ones across the two."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.db import Db
from vaultd.services.common import access_log


def stored(vault: VaultProcess, file_id: str) -> list[Any]:
    """The file's entries as the database holds them, newest first in the log's order."""
    async def read(db: Db) -> list[Any]:
        return await db.raw(db.access_log.name).find({"fileId": file_id}).to_list()
    found = vault.run_service(read)
    return sorted(found, key=lambda doc: (doc["at"], doc["_id"]), reverse=True)


def test_the_sequencer_numbers_the_log_and_the_api_reads_it_in_order(
        vault: VaultProcess, api: httpx.Client) -> None:
    created = upload_ok(api, docs.png(), kind="delivery")
    path = f"/files/{created['id']}/access-log"
    for _ in range(30):
        assert api.get(f"/files/{created['id']}/download").status_code == 200

    def all_numbered() -> list[Any] | None:
        numbered = [doc for doc in stored(vault, created["id"]) if "fileSeq" in doc]
        return numbered if len(numbered) == 31 else None

    numbered = wait_until(all_numbered, timeout=60, what="the upload and 30 downloads numbered")
    assert [doc["fileSeq"] for doc in numbered] == list(range(31, 0, -1))
    assert all("accountSeq" in doc and "fenced" not in doc for doc in numbered)
    for _ in range(12):  # newer than the sequencer's last round: the tail, read by time
        assert api.get(f"/files/{created['id']}/download").status_code == 200
    expected = [access_log.entry_json(doc) for doc in stored(vault, created["id"])]
    assert len(expected) == 43
    first = api.get(path)
    assert first.status_code == 200 and first.json() == expected
    # `before` a time in the middle of the numbered part, and one in the tail.
    for cut in (20, 5):
        older = api.get(path, params={"before": expected[cut]["at"]})
        assert older.status_code == 200
        at = datetime.fromisoformat(expected[cut]["at"])
        assert older.json() == [entry for entry in expected
                                if datetime.fromisoformat(entry["at"]) < at]

"""A vaultd started on a log an older vaultd wrote (no numbers, no counters) numbers it in the
background (`services.common.older_log_numbering`), in the audit sequencer's rounds; killed in
the middle of that walk, the next start finishes it. `GET /v1/files/:id/access-log`, whole and
filtered by action, answers exactly the same entries in the same order before, during and
after, and every entry ends with its numbers."""

from __future__ import annotations

import signal
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess, running_vault
from tests.waiting import wait_until
from vaultd.db import Db
from vaultd.services.common import access_log, numbered_log, older_log_numbering
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts, kills and restarts its own vaultd

# Two of a round's 500 (`log_numbering.MAX_PER_ROUND`, in vaultd's own process): the walk
# takes a step for each half of the burst and more for the spread, so a kill once it is walking
# lands in its middle.
BURST = 1_000
SPREAD = 200  # a page of them (`access_log.LATEST`), then an empty one


def seed_older_log(vault: VaultProcess, account_id: str, file_id: str) -> None:
    """A day-old burst of pages within a second and downloads spread over the day before, as an
    older vaultd wrote them: no numbers, no counters."""
    async def seed(db: Db) -> None:
        day_ago = utcnow() - timedelta(days=1)
        docs = [{"_id": str(uuid.uuid4()), "accountId": account_id, "fileId": file_id,
                 "action": "page", "page": 1 + place % 3, "ip": "203.0.113.9",
                 "at": day_ago + timedelta(milliseconds=place // 2)} for place in range(BURST)]
        docs += [{"_id": str(uuid.uuid4()), "accountId": account_id, "fileId": file_id,
                  "action": "download", "at": day_ago - timedelta(minutes=7 * place)}
                 for place in range(SPREAD)]
        await db.raw(db.access_log.name).insert_many(docs)
        # As if uploaded before them: a file's log is read back to its upload only.
        await db.files.update_one({"_id": file_id},
                                  {"$set": {"createdAt": utcnow() - timedelta(days=30)}})
    vault.run_service(seed)


def pages(api: httpx.Client, file_id: str, query: str = "") -> list[dict[str, Any]]:
    """The file's log through the route, page after page by `before`."""
    shown: list[dict[str, Any]] = []
    before = ""
    while True:
        response = api.get(f"/files/{file_id}/access-log?{query}{before}")
        assert response.status_code == 200, response.text
        shown += response.json()
        if len(response.json()) < access_log.LATEST:
            return shown
        before = f"&before={shown[-1]['at']}"


def walk_state(vault: VaultProcess) -> str:
    async def read(db: Db) -> str:
        state = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
        if state is None or "back" not in state:
            return "not started"
        return "done" if older_log_numbering.done(state) else "walking"
    return str(vault.run_service(read))


def stored(vault: VaultProcess, file_id: str) -> list[Any]:
    async def read(db: Db) -> list[Any]:
        found = await db.raw(db.access_log.name).find({"fileId": file_id}).to_list()
        return sorted(found, key=lambda doc: (doc["at"], doc["_id"]), reverse=True)
    return list(vault.run_service(read))


def test_a_walk_killed_in_the_middle_is_finished_by_the_next_start(tmp_path: Path) -> None:
    with running_vault(tmp_path / "data", own_database=True,
                       VAULTD_AUDIT_ENABLED="false") as vault:  # no numbers: an older vaultd
        account_id, key = vault.new_account("Older Log Ltd")
        with vault.client(key) as api:
            file_id = upload_ok(api, docs.png(), kind="delivery")["id"]
            seed_older_log(vault, account_id, file_id)
            whole, downloads = pages(api, file_id), pages(api, file_id, "action=download&")
        assert whole == [access_log.entry_json(doc) for doc in stored(vault, file_id)]
        assert len(whole) == BURST + SPREAD + 1 and len(downloads) == SPREAD
        assert not any("fileSeq" in doc for doc in stored(vault, file_id))

        vault.stop()
        vault.env["VAULTD_AUDIT_ENABLED"] = "true"
        vault.start()
        wait_until(lambda: walk_state(vault) == "walking", timeout=120, interval=0.05,
                   what="the walk of the older entries started")
        vault.stop(signal.SIGKILL)  # in the middle of the walk
        wait_for_orphaned_database_to_exit(vault)
        vault.start()
        with vault.client(key) as api:
            assert pages(api, file_id) == whole  # during the walk, or just after it
            assert pages(api, file_id, "action=download&") == downloads
            wait_until(lambda: walk_state(vault) == "done", timeout=300, interval=0.5,
                       what="the walk finished by the next start")
            assert pages(api, file_id) == whole
            assert pages(api, file_id, "action=download&") == downloads
        numbered = stored(vault, file_id)
        for field, action in (("fileSeq", None), ("accountSeq", None),
                              ("fileActionSeq", "page"), ("accountActionSeq", "download")):
            numbers = [doc[field] for doc in numbered if action in (None, doc["action"])]
            assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
        assert not any("fenced" in doc for doc in numbered)

"""Deleting a file with 1,000 links answers after one bounded write (`services.files.deletions`):
from its 204 on no page of its links is served, the usage and live counts are already exact,
and a SIGKILL while its links are still being deleted in the background is finished by the next
start's recovery: every link and aggregate goes, the record goes, and the `delete` entry and the
`file.deleted` webhook are each written once."""

from __future__ import annotations

import asyncio
import signal
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests import documents as docs
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.embedded_database import running_database, vault_db
from tests.http_helpers import FILE_NOT_FOUND, LINK_GONE, assert_json_error, create_link, upload_ok
from tests.scale_seed import _link
from tests.vault_process import running_vault
from tests.waiting import wait_until
from tests.webhook_receiver import running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe
from vaultd.db import Db
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts, kills and restarts a vaultd

# Ten of the clean-up's reads (`batches.WINDOW`, 100) and fifty deletes of `DELETE_BATCH` (20),
# each followed by a rest as long as it took: the kill lands a few requests after the 204, long
# before they are done. Too few links would fail the cut's `links > 0`, never pass wrongly.
LINKS = 1000
STATS = 100  # link aggregates (`link_stats`), as pages viewed through its links leave them


async def _seed_links(db: Db, account_id: str, file_id: str) -> None:
    """LINKS live links of the file, counted on the file and the account as creation counts."""
    now = utcnow()
    made = [_link(account_id, file_id, now, now + timedelta(days=1 + n % 300))
            for n in range(LINKS)]
    for first in range(0, LINKS, 1000):
        await db.raw("links").insert_many(made[first:first + 1000], ordered=False)
    await db.raw("link_stats").insert_many(
        [{"_id": str(uuid.uuid4()), "fileId": file_id, "accountId": account_id}
         for _ in range(STATS)])
    for collection, key in (("files", file_id), ("accounts", account_id)):
        await db.raw(collection).update_one({"_id": key}, {"$inc": {"linkCount.live": LINKS}})


def _state(file_id: str, account_id: str) -> Any:
    async def read(db: Db) -> dict[str, Any]:
        account = await db.accounts.find_one({"_id": account_id})
        assert account is not None
        file = await db.files.find_one({"_id": file_id}, {"state": 1})
        return {"links": await db.links.count_documents({"fileId": file_id}),
                "stats": await db.link_stats.count_documents({"fileId": file_id}),
                "file": file["state"] if file is not None else None,
                "documents": account["usage"]["documents"],
                "accountLive": account["linkCount"]["live"],
                "pending": account.get("pendingDeletes", []),
                "entries": await db.access_log.count_documents(
                    {"fileId": file_id, "action": "delete"}),
                "events": await db.webhook_outbox.count_documents(
                    {"accountId": account_id, "type": "file.deleted"})}
    return read


def test_a_delete_of_1000_links_answers_at_once_and_a_kill_during_its_clean_up_is_finished(
        tmp_path: Path) -> None:
    with running_receiver() as receiver, running_vault(
            tmp_path / "data", own_database=True, VAULTD_RENDER_WORKERS="1",  # one page read
            **FAST_RETRIES) as vault:
        account_id, key = vault.new_account("Cut Deletion Ltd", plan="business")
        with vault.client(key) as api:
            subscribe(api, receiver, ["file.deleted"], vault)
            file_id = upload_ok(api, docs.pdf(2))["id"]
            token = create_link(api, file_id)["token"]
            vault.secrets.append(token)
            vault.run_service(lambda db: _seed_links(db, account_id, file_id))
            assert api.get(f"/views/{token}/pages/1").status_code == 200
            assert api.get("/account").json()["usage"]["activeLinks"] == LINKS + 1
            answer = api.delete(f"/files/{file_id}")
            assert answer.status_code == 204 and answer.content == b""
            # Before the background steps have deleted its links: none of them serves a page.
            assert_json_error(api.get(f"/views/{token}/pages/1"), 404, LINK_GONE)
            assert_json_error(api.get(f"/files/{file_id}"), 404, FILE_NOT_FOUND)
            assert_json_error(api.delete(f"/files/{file_id}"), 404, FILE_NOT_FOUND)
            usage = api.get("/account").json()["usage"]
            assert (usage["documents"], usage["activeLinks"]) == (0, 0)
        vault.stop(signal.SIGKILL)  # its links are still being deleted
        wait_for_orphaned_database_to_exit(vault)
        with running_database(vault.data_dir / "db") as server:
            async def read_cut() -> dict[str, Any]:
                async with vault_db(server) as db:
                    return dict(await _state(file_id, account_id)(db))

            cut = asyncio.run(read_cut())
        assert cut["links"] > 0 and cut["file"] == "deleting", cut
        assert (cut["documents"], cut["accountLive"], cut["entries"]) == (0, 0, 1), cut
        vault.start()  # recovery takes the deletion over
        done = {"links": 0, "stats": 0, "file": None, "documents": 0, "accountLive": 0,
                "pending": [], "entries": 1, "events": 1}
        wait_until(lambda: vault.run_service(_state(file_id, account_id)) == done,
                   timeout=300, what="the resumed deletion finished")
        sent = receiver.wait_for(lambda got: len(got) >= 1, timeout=30)[0]
        assert sent.verified and sent.event["type"] == "file.deleted"
        assert sent.event["data"]["fileId"] == file_id
        # One event. Delivery is at least once: a kill that lands after the receiver answered
        # and before the delivery was recorded sends the same message again, same webhook-id.
        assert {got.headers["webhook-id"] for got in receiver.received} == {
            sent.headers["webhook-id"]}, receiver.received
        with vault.client(key) as api:
            assert_json_error(api.get(f"/views/{token}"), 404, LINK_GONE)
            assert api.get("/account").json()["usage"]["activeLinks"] == 0

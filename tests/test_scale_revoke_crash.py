"""A revoke-all interrupted by a crash after its one write (the file's link generation raised) is
finished by recovery: every link live at its start ends revoked, the live counts reach zero,
and its webhook goes out once with the full count (`services.links.revoke_jobs`)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests import documents as docs
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.http_helpers import upload_ok
from tests.vault_process import running_vault
from tests.waiting import wait_until
from tests.webhook_receiver import distinct, running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe
from vaultd.db import Db
from vaultd.services.accounts import link_counts
from vaultd.services.accounts.accounts import get_account
from vaultd.services.links import revoke_jobs
from vaultd.services.links.links import LinkRequest, create_link
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts, kills and restarts a vaultd

LINKS = revoke_jobs.BATCH * 2 + 50
HOLD = {**FAST_RETRIES, "VAULTD_WEBHOOKS_HOLD_SECONDS": "3"}


def test_a_revoke_all_cut_after_its_write_is_finished_and_announced_once(
        tmp_path: Path) -> None:
    with running_receiver() as receiver, running_vault(tmp_path / "data", own_database=True,
                                                       **HOLD) as vault:
        account_id, key = vault.new_account("Cut Short Ltd", plan="business")
        with vault.client(key) as client:
            subscribe(client, receiver, ["view.revoked"], vault)
            file_id = upload_ok(client, docs.pdf(1))["id"]

        async def write_only(db: Db) -> Any:
            account = await get_account(db, account_id)
            request = LinkRequest(file_id, "kim@example.com", "Kim", 3600)
            for _ in range(LINKS):
                await create_link(db, account, request)
            # The job of an instance that dies right after its write.
            file = await db.files.find_one({"_id": file_id}, revoke_jobs.HOLDER_FIELDS)
            assert file is not None
            job = await revoke_jobs._start(db, dict(file), account_id, LINKS, utcnow(),
                                           owner="vaultd-killed")
            return await revoke_jobs._raise_generation(db, dict(file), job)

        assert vault.run_service(write_only)
        vault.stop(signal.SIGKILL)
        wait_for_orphaned_database_to_exit(vault)
        vault.start()  # recovery at start-up finishes the job
        [sent] = receiver.wait_for(lambda got: len(got) >= 1, timeout=30)
        assert sent.verified and sent.event["data"]["revoked"] == LINKS

        async def state(db: Db) -> tuple[int, ...]:
            return (await db.links.count_documents({"fileId": file_id, "revoked": False}),
                    await link_counts.account_live(db, account_id),
                    await link_counts.file_live(db, file_id),
                    await db.raw(revoke_jobs.JOBS).count_documents({}),
                    await db.webhook_outbox.count_documents({"accountId": account_id,
                                                             "type": "view.revoked"}))

        # Finished (the links' marking goes on in the background after the start: waited for),
        # counted, and one message (a second would share its id, never be sent).
        done = (0, 0, 0, 0, 1)
        wait_until(lambda: vault.run_service(state) == done, timeout=120,
                   what="the resumed revoke-all finished")
        assert vault.run_service(state) == done
        assert len(distinct(receiver.received)) == 1
        with vault.client(key) as client:
            log = client.get(f"/files/{file_id}/access-log?action=revoke").json()
        assert len(log) == 1

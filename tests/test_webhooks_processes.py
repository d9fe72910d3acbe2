"""Webhook delivery across processes: two vaultd on one database never send a message twice at
once (the lease), and a vaultd killed with deliveries pending sends them after a restart."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests import documents as docs
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess, assert_no_secrets_in_log, running_vault
from tests.waiting import wait_until
from tests.webhook_receiver import Reply, running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe
from vaultd.crypto.keyring import MasterKeyring
from vaultd.embedded_db import running_address

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


def slow_ok(_: int) -> Reply:
    time.sleep(0.3)  # widens the window in which a second process could take the same message
    return Reply(200)


def test_two_processes_deliver_each_message_once(tmp_path: Path) -> None:
    ring = MasterKeyring.generate().serialize(one_line=True)
    env = {**FAST_RETRIES, "VAULTD_WEBHOOKS_POLL_SECONDS": "0.05", "VAULTD_MASTER_KEY": ring,
           "VAULTD_RENDER_WORKERS": "1"}
    with running_receiver() as receiver, running_vault(tmp_path / "a", own_database=True,
                                                       **env) as a:
        # A's embedded database requires its credentials (vaultd.db_credentials).
        uri = running_address(a.data_dir / "db")
        assert uri is not None
        b = VaultProcess(tmp_path / "b", env={**env, "VAULTD_MONGODB_URI": uri}).start()
        try:
            receiver.reply = slow_ok
            _, key = a.new_account("Twin Ltd", plan="business")
            with a.client(key) as client:
                subscribe(client, receiver, ["file.uploaded"], a)
                for _ in range(6):
                    upload_ok(client, docs.pdf(1))
            receiver.wait_for(lambda got: len(got) >= 6)
            # Settled as delivered: no process sends them again (a lease outlives any attempt).
            wait_until(lambda: a.run_service(lambda db: db.webhook_outbox.count_documents(
                {"state": "delivered"})) == 6, what="six messages delivered")
            ids = [r.headers["webhook-id"] for r in receiver.received]
            assert len(ids) == 6 and len(set(ids)) == 6, ids
            assert all(r.verified for r in receiver.received)
        finally:
            b.stop()
        b.secrets.extend(a.secrets)
        assert_no_secrets_in_log(b)


def test_deliveries_pending_when_vaultd_is_killed_are_sent_after_restart(
        tmp_path: Path) -> None:
    env = {**FAST_RETRIES, "VAULTD_WEBHOOKS_RETRY_SCHEDULE": "3,3"}
    with running_receiver() as receiver, running_vault(tmp_path / "data", own_database=True,
                                                       **env) as vault:
        _, key = vault.new_account("Crashy Ltd", plan="pro")
        # The first attempt fails; vaultd dies before the retry (or even before settling it).
        receiver.reply = lambda n: Reply(503) if n == 0 else Reply(200)
        with vault.client(key) as client:
            subscribe(client, receiver, ["file.uploaded"], vault)
            upload_ok(client, docs.pdf(1))
            receiver.wait_for(lambda got: len(got) >= 1)
        vault.stop(signal.SIGKILL)
        wait_for_orphaned_database_to_exit(vault)
        vault.start()
        seen = receiver.wait_for(lambda got: len(got) >= 2, timeout=30)
        assert seen[1].headers["webhook-id"] == seen[0].headers["webhook-id"]
        assert seen[1].verified and seen[1].body == seen[0].body

"""Notification mails across processes and crashes, with the real SMTP server: two vaultd on one
database report each first open in one mail only (coalesced per window, shortened here by its
setting); a mail queued while the SMTP server is down survives
a vaultd killed with SIGKILL and is sent, once, after the restart."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests import documents as docs
from tests.console_auth import browser, new_member, sign_in
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.http_helpers import created, upload_ok
from tests.mail_server import MailServer, parts
from tests.vault_process import VaultProcess, assert_no_secrets_in_log, running_vault
from tests.waiting import wait_until
from vaultd.crypto.keyring import MasterKeyring
from vaultd.embedded_db import running_address

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

FAST = {"VAULTD_WEBHOOKS_POLL_SECONDS": "0.05", "VAULTD_ANALYTICS_FLUSH_SECONDS": "0",
        "VAULTD_RENDER_WORKERS": "1", "VAULTD_TRUSTED_PROXIES": "127.0.0.1/32",
        "VAULTD_NOTIFICATIONS_OPEN_MAIL_WINDOW_SECONDS": "6"}


def opened_mails(mail: MailServer, address: str) -> list[str]:
    with mail.inbox.lock:
        return [m["Subject"] for m in mail.inbox.messages
                if m["To"] == address and m["Subject"].startswith("Opened:")]


def member_links(vault: VaultProcess, mail: MailServer, key: str, email: str,
                 count: int) -> list[str]:
    """A member who asked for first-open mails, and `count` links they made."""
    account = vault.run_service(lambda db: db.api_keys.find_one({}, {"accountId": 1}))
    new_member(vault, account["accountId"], email, role="member")
    with browser(vault) as client:
        csrf = {"X-CSRF-Token": sign_in(client, vault, mail, email)["csrfToken"]}
        assert client.post("/console/settings/notifications", data={
            "_csrf": csrf["X-CSRF-Token"], "firstOpen": "on"}).status_code == 303
        with vault.client(key) as api:
            file = upload_ok(api, docs.pdf(1), name="Shared.pdf")
        tokens = [created(client.post("/console/api/views", headers=csrf, json={
            "fileId": file["id"], "viewerEmail": f"v{n}@viewer.example"}))["token"]
                  for n in range(count)]
    vault.secrets.extend(tokens)
    return tokens


def reported_viewers(mail: MailServer, address: str) -> list[str]:
    """Every viewer address named in the first-open mails to `address`, as often as named."""
    with mail.inbox.lock:
        texts = [parts(m)["text/plain"] for m in mail.inbox.messages
                 if m["To"] == address and m["Subject"].startswith("Opened:")]
    return sorted(re.findall(r"<(v\d+@viewer\.example)>", "".join(texts)))


def sent_states(vault: VaultProcess) -> list[str]:
    async def read(db: object) -> list[str]:
        return [doc["state"] async for doc in db.notification_mails.find({})]  # type: ignore[attr-defined]
    states: list[str] = vault.run_service(read)
    return states


def test_two_processes_report_each_first_open_once(tmp_path: Path, mail: MailServer) -> None:
    ring = MasterKeyring.generate().serialize(one_line=True)
    # One blob directory for both (the local backend), so either serves every file's pages.
    env = {**FAST, **mail.env(), "VAULTD_MASTER_KEY": ring,
           "VAULTD_STORAGE_LOCAL_DIR": str(tmp_path / "blobs")}
    with running_vault(tmp_path / "a", own_database=True, **env) as a:
        uri = running_address(a.data_dir / "db")
        assert uri is not None
        b = VaultProcess(tmp_path / "b", env={**env, "VAULTD_MONGODB_URI": uri}).start()
        try:
            _, key = a.new_account("Twin Ltd", plan="pro")
            tokens = member_links(a, mail, key, "twin@twin.example", 6)
            for n, token in enumerate(tokens):  # each link opened twice, once in each process
                for server in ((a, b) if n % 2 else (b, a)):
                    with server.client(key) as api:
                        got = api.get(f"/views/{token}/pages/1")
                        assert got.status_code == 200, (server.url, got.text)
            every = sorted(f"v{n}@viewer.example" for n in range(6))
            wait_until(lambda: len(reported_viewers(mail, "twin@twin.example")) >= 6,
                       what="six first opens mailed")
            mailed = len(opened_mails(mail, "twin@twin.example"))
            wait_until(lambda: sent_states(a) == ["sent"] * mailed, what="the mails marked sent")
            assert reported_viewers(mail, "twin@twin.example") == every  # each once
            assert 1 <= mailed < 6  # coalesced: the opens came faster than one per window
        finally:
            b.stop()
        b.secrets.extend(a.secrets)
        assert_no_secrets_in_log(b)


def test_a_mail_queued_while_smtp_is_down_is_sent_once_after_a_kill(
        tmp_path: Path, mail: MailServer) -> None:
    with running_vault(tmp_path / "data", own_database=True, **FAST, **mail.env()) as vault:
        _, key = vault.new_account("Crashy Ltd", plan="pro")
        [token] = member_links(vault, mail, key, "crash@crashy.example", 1)
        mail.stop()
        try:
            with vault.client(key) as api:
                assert api.get(f"/views/{token}/pages/1").status_code == 200
            # Tried and refused (the server is down): put back for a retry, still pending.
            wait_until(lambda: vault.run_service(lambda db: db.notification_mails.count_documents(
                {"state": "pending", "attempts": {"$gte": 1}})) == 1, what="a failed attempt")
            vault.stop(signal.SIGKILL)
            wait_for_orphaned_database_to_exit(vault)
        finally:
            mail.start()
        vault.start()
        wait_until(lambda: len(opened_mails(mail, "crash@crashy.example")) == 1, timeout=60,
                   what="the mail, after the restart")
        wait_until(lambda: sent_states(vault) == ["sent"], what="the mail marked sent")
        assert opened_mails(mail, "crash@crashy.example") == ["Opened: Shared.pdf"]

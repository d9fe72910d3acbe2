"""Members' notification mails through a real vaultd and the real SMTP server: a link's first
open mailed once to the member who made it, nothing for an API key's links, the daily digest,
and the refusals of the preference route."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import Message
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.http_helpers import assert_json_error, create_link, created, upload_ok
from tests.mail_server import MailServer, parts
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.records.members import RoleName
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

NOT_A_MEMBER = "notifications are a member's: sign in to the console to choose yours"
FAST = {"VAULTD_WEBHOOKS_POLL_SECONDS": "0.1", "VAULTD_ANALYTICS_FLUSH_SECONDS": "0"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("notify") / "data", mail, **FAST) as server:
        yield server


class Member:
    """A signed-in member's browser-like client, calling the console's API."""

    def __init__(self, client: httpx.Client, body: dict[str, Any]) -> None:
        self.client, self.csrf = client, body["csrfToken"]

    def call(self, method: str, path: str, headers: dict[str, str] | None = None,
             **kwargs: Any) -> httpx.Response:
        return self.client.request(method, "/console/api/" + path,
                                   headers={"X-CSRF-Token": self.csrf, **(headers or {})},
                                   **kwargs)

    def share(self, file_id: str, viewer: str) -> str:
        token: str = created(self.call("POST", "views", json={
            "fileId": file_id, "viewerEmail": viewer, "viewerName": "Vera Viewer"}))["token"]
        return token


OPEN: list[httpx.Client] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def signed_in(vault: VaultProcess, mail: MailServer, account: str, email: str,
              role: RoleName = "member") -> Member:
    new_member(vault, account, email, role=role)
    client = browser(vault)
    OPEN.append(client)
    return Member(client, sign_in(client, vault, mail, email))


def open_first_page(api: httpx.Client, token: str) -> None:
    assert api.get(f"/views/{token}/pages/1").status_code == 200


def mails_to(mail: MailServer, address: str, subject_start: str) -> list[Message]:
    with mail.inbox.lock:
        return [m for m in mail.inbox.messages
                if m["To"] == address and m["Subject"].startswith(subject_start)]


def test_a_first_open_is_mailed_once_to_the_member_who_made_the_link(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Harbour Legal")
    ana = signed_in(vault, mail, account, "ana@harbour.example")
    assert ana.call("GET", "notifications").json() == {"firstOpen": False, "dailyDigest": False}
    on = ana.call("PUT", "notifications", json={"firstOpen": True})
    assert on.status_code == 200 and on.json() == {"firstOpen": True, "dailyDigest": False}
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(2), name="Q3 <b>board</b> pack.pdf")
        first, second = ana.share(file["id"], "vera@viewer.example"), ana.share(
            file["id"], "otto@viewer.example")
        by_key = create_link(api, file["id"], "kim@viewer.example")["token"]
        open_first_page(api, first)
        wait_until(lambda: len(mails_to(mail, "ana@harbour.example", "Opened:")) == 1,
                   what="the first open's mail")
        # Opened again, and other pages: no second mail. A link made by an API key has no
        # member to tell. The open of `second`, mailed after them, is the marker that the
        # sender has had its chance to send anything they queued.
        open_first_page(api, first)
        assert api.get(f"/views/{first}/pages/2").status_code == 200
        open_first_page(api, by_key)
        open_first_page(api, second)
    wait_until(lambda: len(mails_to(mail, "ana@harbour.example", "Opened:")) == 2,
               what="the second link's mail")
    got = mails_to(mail, "ana@harbour.example", "Opened:")
    assert [m["Subject"] for m in got] == ["Opened: Q3 <b>board</b> pack.pdf"] * 2
    texts = [parts(m)["text/plain"] for m in got]
    assert "Vera Viewer <vera@viewer.example>" in texts[0]
    assert "Vera Viewer <otto@viewer.example>" not in texts[0]
    assert "<otto@viewer.example>" in texts[1]
    assert not any("kim@viewer.example" in "".join(parts(m).values())
                   for m in mail.inbox.messages)
    assert first not in texts[0] and "/v/" not in texts[0]  # no token, no link in the mail


def test_a_member_who_asked_nothing_gets_no_mail_and_the_digest_lists_the_day(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Digest Ltd")
    quiet = signed_in(vault, mail, account, "quiet@digest.example")
    daily = signed_in(vault, mail, account, "daily@digest.example")
    assert daily.call("PUT", "notifications", json={"dailyDigest": True}).json() == {
        "firstOpen": False, "dailyDigest": True}
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name="Lease.pdf")
        for member, viewer in ((quiet, "q@viewer.example"), (daily, "d1@viewer.example"),
                               (daily, "d2@viewer.example")):
            open_first_page(api, member.share(file["id"], viewer))
    member_id = daily.client.get("/console/auth/session").json()["member"]["id"]

    async def due_now(db: Any) -> None:
        await db.notification_prefs.update_one({"_id": member_id},
                                               {"$set": {"digestDueAt": utcnow()}})
    vault.run_service(due_now)
    wait_until(lambda: len(mails_to(mail, "daily@digest.example", "Your links today")) == 1,
               what="the digest")
    digest = mails_to(mail, "daily@digest.example", "Your links today")[0]
    assert digest["Subject"] == "Your links today: 2 opened for the first time"
    text = parts(digest)["text/plain"]
    assert "Lease.pdf: Vera Viewer <d1@viewer.example>" in text
    assert "<d2@viewer.example>" in text and "q@viewer.example" not in text

    async def next_due(db: Any) -> Any:
        doc = await db.notification_prefs.find_one({"_id": member_id})
        return doc["digestDueAt"]
    # Moved a day on: the sweep that follows finds nothing due.
    assert (vault.run_service(next_due) - utcnow()).total_seconds() > 86_000
    assert [m["Subject"] for m in mails_to(mail, "quiet@digest.example", "")] == [
        "Your sign-in code"]


def test_the_preferences_refuse_a_key_and_bad_bodies(vault: VaultProcess,
                                                     mail: MailServer) -> None:
    account, key = vault.new_account("Refusals Inc")
    with vault.client(key) as api:
        assert_json_error(api.get("/notifications"), 403, NOT_A_MEMBER)
        assert_json_error(api.put("/notifications", json={"firstOpen": True}), 403,
                          NOT_A_MEMBER)
    auditor = signed_in(vault, mail, account, "audit@refusals.example", role="auditor")
    assert_json_error(auditor.call("PUT", "notifications", json={"firstOpen": "yes"}), 400,
                      "firstOpen must be true or false")
    assert_json_error(auditor.call("PUT", "notifications", json={"weekly": True}), 400,
                      "unknown field: weekly (firstOpen, dailyDigest)")
    assert_json_error(auditor.call("PUT", "notifications", json={}), 400,
                      "send an object with firstOpen and/or dailyDigest")
    assert_json_error(auditor.call("PUT", "notifications", content=b"[true]",
                                   headers={"Content-Type": "application/json"}), 400,
                      "request body must be a JSON object")
    # An auditor's own mail choice changes no record of the account: allowed.
    assert auditor.call("PUT", "notifications", json={"dailyDigest": True}).json() == {
        "firstOpen": False, "dailyDigest": True}

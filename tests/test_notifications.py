"""Members' notification mails through a real vaultd and the real SMTP server: a link's first
open mailed once to the member who made it, nothing for the links of a key no member made;
first opens coalesced into one mail per member per window (the window shortened by its
setting), for links made with a member's own API key and for room links too; the daily digest,
and the preference form's refusals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email.message import Message
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.http_helpers import assert_json_error, create_link, created, upload_ok
from tests.mail_server import MailServer, parts
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.records.members import RoleName
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

NOT_SIGNED_IN = "not signed in (or the session has ended): sign in again"
NO_ORIGIN = "cross-site request refused: the request carries no Origin or Referer"
WINDOW_SECONDS = 8  # the first-open mail window, 10 minutes in production
FAST = {"VAULTD_WEBHOOKS_POLL_SECONDS": "0.1", "VAULTD_ANALYTICS_FLUSH_SECONDS": "0",
        "VAULTD_NOTIFICATIONS_OPEN_MAIL_WINDOW_SECONDS": str(WINDOW_SECONDS)}


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

    def choose(self, **wanted: bool) -> httpx.Response:
        """The Settings page's Notifications form: a checked box sends "on", an unchecked none."""
        fields = {name: "on" for name, on in wanted.items() if on}
        return self.client.post("/console/settings/notifications",
                                data={"_csrf": self.csrf, **fields})

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
    settings = ana.client.get("/console/settings", headers={"Accept": "text/html"}).text
    assert 'name="firstOpen" checked' not in settings  # nothing is mailed unless asked
    on = ana.choose(firstOpen=True)
    assert on.status_code == 303
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(2), name="Q3 <b>board</b> pack.pdf")
        first, second = ana.share(file["id"], "vera@viewer.example"), ana.share(
            file["id"], "otto@viewer.example")
        by_key = create_link(api, file["id"], "kim@viewer.example")["token"]
        open_first_page(api, first)
        wait_until(lambda: len(mails_to(mail, "ana@harbour.example", "Opened:")) == 1,
                   what="the first open's mail")
        # Opened again, and other pages: no second mail. A link made by a key the operator
        # made has no member to tell. The open of `second`, mailed after them (at the end of
        # the window), is the marker that the sender has had its chance to send anything else.
        open_first_page(api, first)
        assert api.get(f"/views/{first}/pages/2").status_code == 200
        open_first_page(api, by_key)
        open_first_page(api, second)
    wait_until(lambda: len(mails_to(mail, "ana@harbour.example", "Opened:")) == 2,
               what="the second link's mail", timeout=WINDOW_SECONDS + 30)
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
    assert daily.choose(dailyDigest=True).status_code == 303
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name="Lease.pdf")
        for member, viewer in ((quiet, "q@viewer.example"), (daily, "d1@viewer.example"),
                               (daily, "d2@viewer.example")):
            open_first_page(api, member.share(file["id"], viewer))
    member_id = daily.client.get("/console/auth/session").json()["member"]["id"]

    async def noted(db: Any) -> int:
        count: int = await db.notification_opens.count_documents({"memberId": member_id})
        return count
    # Noted once the pages are on their way (the page path's analytics): wait for both notes,
    # or the digest made "now" may be due before the second.
    wait_until(lambda: vault.run_service(noted) == 2, what="both opens noted")

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


def test_the_preference_form_is_a_signed_in_members_own(vault: VaultProcess,
                                                        mail: MailServer) -> None:
    account, key = vault.new_account("Refusals Inc")
    with vault.client(key) as api:  # a key has no mailbox: the form is not the API's
        keyed = api.post(f"{vault.url}/console/settings/notifications",
                         data={"firstOpen": "on"})
        assert_json_error(keyed, 403, NO_ORIGIN)  # a script's post, not the site's own page
        keyed = api.post(f"{vault.url}/console/settings/notifications",
                         data={"firstOpen": "on"}, headers={"Origin": vault.url})
        assert_json_error(keyed, 401, NOT_SIGNED_IN)
    auditor = signed_in(vault, mail, account, "audit@refusals.example", role="auditor")
    forged = auditor.client.post("/console/settings/notifications",
                                 data={"_csrf": "not-the-token", "firstOpen": "on"})
    assert_json_error(forged, 403, "the CSRF token is not this session's")
    assert auditor.choose(dailyDigest=True).status_code == 303

    async def saved(db: Any) -> Any:
        return await db.notification_prefs.find_one({"accountId": account})
    prefs = vault.run_service(saved)
    assert (prefs["firstOpen"], prefs["dailyDigest"]) == (False, True)
    assert prefs["digestDueAt"] is not None


def members_key(member: Member) -> str:
    """An API key made by `member` (an admin) in Settings: its links are the member's."""
    made = member.client.post("/console/settings/keys", headers={"Accept": "text/html"},
                              data={"_csrf": member.csrf, "name": "crm", "role": "member"})
    assert made.status_code == 201, made.text
    match = re.search(r'<input id="new-key" type="text" readonly value="([^"]+)"', made.text)
    assert match
    return match.group(1)


def test_first_opens_in_a_window_leave_in_one_mail_for_key_and_room_links(
        vault: VaultProcess, mail: MailServer) -> None:
    account, _ = vault.new_account("Coalesce Partners", plan="business")
    mia = signed_in(vault, mail, account, "mia@coalesce.example", role="admin")
    assert mia.choose(firstOpen=True).status_code == 303
    key = members_key(mia)
    vault.secrets.append(key)
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name="Term sheet.pdf")
        tokens = [create_link(api, file["id"], f"reader{n}@viewer.example")["token"]
                  for n in range(4)]
        room = create_room(api, "Data room")
        add_file(api, room["id"], file["id"])
        room_token = room_link(api, room["id"], "roomreader@viewer.example")["token"]
        open_first_page(api, tokens[0])
        wait_until(lambda: len(mails_to(mail, "mia@coalesce.example", "Opened:")) == 1,
                   what="the first open's mail, at once")
        # Within the window of that mail: three more first opens (one twice), a room's.
        for token in (tokens[1], tokens[2], tokens[2], tokens[3]):
            open_first_page(api, token)
        assert api.get(f"/room-views/{room_token}").status_code == 200
    wait_until(lambda: len(mails_to(mail, "mia@coalesce.example", "Opened:")) == 2,
               what="the window's one mail", timeout=WINDOW_SECONDS + 30)
    first, gathered = mails_to(mail, "mia@coalesce.example", "Opened:")
    assert first["Subject"] == "Opened: Term sheet.pdf"
    assert "<reader0@viewer.example>" in parts(first)["text/plain"]
    assert gathered["Subject"] == "Opened: 4 of your links"
    text = parts(gathered)["text/plain"]
    for n in (1, 2, 3):
        assert text.count(f"<reader{n}@viewer.example>") == 1, text
    assert "the room Data room: " in text and "<roomreader@viewer.example>" in text
    assert "reader0@" not in text  # no link is in two mails
    assert all(token not in text for token in (*tokens, room_token))


def test_a_link_made_with_a_key_mails_the_member_who_made_the_key(
        vault: VaultProcess, mail: MailServer) -> None:
    account, _ = vault.new_account("Key Owners")
    maker = signed_in(vault, mail, account, "maker@keys.example", role="admin")
    other = signed_in(vault, mail, account, "other@keys.example", role="admin")
    for member in (maker, other):
        assert member.choose(firstOpen=True).status_code == 303
    key = members_key(maker)
    vault.secrets.append(key)
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name="Keyed.pdf")
        open_first_page(api, create_link(api, file["id"], "kay@viewer.example")["token"])
    wait_until(lambda: len(mails_to(mail, "maker@keys.example", "Opened:")) == 1,
               what="the key maker's mail")
    assert "<kay@viewer.example>" in parts(
        mails_to(mail, "maker@keys.example", "Opened:")[0])["text/plain"]
    assert mails_to(mail, "other@keys.example", "Opened:") == []

"""The console's Settings page over HTTP, without a browser, through a real vaultd and its SMTP
server: every form a member or an auditor may not post is refused 403 in the role's words (the
page hides them; the server refuses them anyway), a key whose maker was removed says it keeps
working, bad invitations are refused in words, and a member's own notifications are saved.
The browser half is tests/test_console_settings_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.http_helpers import assert_json_error
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from vaultd.records.members import RoleName

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
MANAGE_REFUSED = "the {} role cannot manage members, API keys, webhooks or branding"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("settings-http") / "data", mail) as server:
        yield server


@pytest.fixture(scope="module")
def account(vault: VaultProcess) -> str:
    account_id, _ = vault.new_account(name="Harbour Legal")
    return account_id


class Session:
    """A signed-in member's client posting the console's forms as its pages do."""

    def __init__(self, vault: VaultProcess, mail: MailServer, account: str, email: str,
                 role: RoleName) -> None:
        self.member_id = new_member(vault, account, email, role=role)
        self.client = browser(vault)
        self.csrf = sign_in(self.client, vault, mail, email)["csrfToken"]

    def post(self, path: str, **fields: str) -> httpx.Response:
        return self.client.post(path, data={"_csrf": self.csrf, **fields}, headers=HTML)

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def sessions(vault: VaultProcess, mail: MailServer, account: str) -> Iterator[Any]:
    made: list[Session] = []

    def make(email: str, role: RoleName) -> Session:
        made.append(Session(vault, mail, account, email, role))
        return made[-1]
    yield make
    for session in made:
        session.close()


def new_key_in(page_html: str) -> str:
    match = re.search(r'<input id="new-key" type="text" readonly value="([^"]+)"', page_html)
    assert match, "no New key field on the page"
    return match.group(1)


@pytest.mark.parametrize("role", ["auditor", "member"])
def test_forms_a_role_may_not_post_are_refused_with_the_roles_words(
        vault: VaultProcess, sessions: Any, role: RoleName) -> None:
    admin = sessions(f"boss-{role}@harbour.example", "admin")
    created = admin.post("/console/settings/keys", name="kept")
    assert created.status_code == 201
    key = new_key_in(created.text)
    vault.secrets.append(key)
    key_id = next(k["id"] for k in httpx.get(f"{vault.url}/v1/keys", headers={
        "Authorization": f"Bearer {key}"}).json()["keys"] if k["name"] == "kept")
    weak = sessions(f"weak-{role}@harbour.example", role)
    refused = MANAGE_REFUSED.format(role)
    for path, fields in (("/console/settings/keys", {"name": "mine"}),
                         (f"/console/settings/keys/{key_id}/revoke", {}),
                         ("/console/settings/members", {"email": "x@harbour.example",
                                                        "role": "admin"}),
                         (f"/console/settings/members/{weak.member_id}/role", {"role": "admin"}),
                         (f"/console/settings/members/{admin.member_id}/remove", {})):
        answer = weak.post(path, **fields)
        assert answer.status_code == 403, path
        assert refused in answer.text
        scripted = weak.client.post(path, data={"_csrf": weak.csrf, **fields})
        assert_json_error(scripted, 403, refused)
    with httpx.Client(base_url=f"{vault.url}/v1",
                      headers={"Authorization": f"Bearer {key}"}) as api:
        assert api.get("/account").status_code == 200  # the key survived every attempt
        people = api.get("/members").json()["members"]
    assert {p["email"]: p["role"] for p in people}[f"weak-{role}@harbour.example"] == role
    assert "x@harbour.example" not in {p["email"] for p in people}


def test_a_key_whose_maker_was_removed_says_it_keeps_working(
        vault: VaultProcess, account: str, sessions: Any) -> None:
    maker = sessions("leaver@harbour.example", "admin")
    key = new_key_in(maker.post("/console/settings/keys", name="left behind").text)
    vault.secrets.append(key)
    stayer = sessions("stayer@harbour.example", "admin")

    async def count_admins(db: Any) -> None:
        # Members inserted as records (tests.member_records) skip the count the service keeps
        # for its last-admin rule: set it to what the records say.
        admins = await db.members.count_documents({"accountId": account, "role": "admin",
                                                   "state": {"$ne": "removed"}})
        await db.accounts.update_one({"_id": account}, {"$set": {"adminCount": admins}})
    vault.run_service(count_admins)
    assert stayer.post(f"/console/settings/members/{maker.member_id}/remove").status_code == 303
    page = stayer.client.get("/console/settings", headers=HTML).text
    assert ("leaver@harbour.example was removed: this key keeps working until it is revoked."
            in page)
    with vault.client(key) as api:
        assert api.get("/account").status_code == 200


def test_a_bad_invitation_is_refused_in_words(vault: VaultProcess, sessions: Any) -> None:
    admin = sessions("careful@harbour.example", "admin")
    answer = admin.post("/console/settings/members", email="not an address", role="member")
    assert answer.status_code == 400
    assert "email must be a valid email address" in answer.text
    wrong_role = admin.post("/console/settings/members", email="ok@harbour.example",
                            role="owner")
    assert wrong_role.status_code == 400
    assert "role must be one of admin, member, auditor" in wrong_role.text


def test_the_notifications_form_saves_the_members_own_choice(
        vault: VaultProcess, sessions: Any) -> None:
    auditor = sessions("watcher@harbour.example", "auditor")
    saved = auditor.post("/console/settings/notifications", firstOpen="on")
    assert saved.status_code == 303
    assert saved.headers["Location"] == "/console/settings?done=notifications-saved"
    page = auditor.client.get(saved.headers["Location"], headers=HTML).text
    assert 'name="firstOpen" checked' in page and 'name="dailyDigest" checked' not in page


def test_an_admin_adds_an_endpoint_sees_its_secret_once_and_its_log_and_deletes_it(
        vault: VaultProcess, sessions: Any) -> None:
    admin = sessions("hooks@harbour.example", "admin")
    auditor = sessions("hooks-audit@harbour.example", "auditor")
    url = "https://hooks.example.com/in?next=<script>alert(1)</script>"
    none = admin.post("/console/settings/webhooks", url=url)  # every box unchecked
    assert none.status_code == 400 and "events must be a non-empty list among" in none.text
    made = admin.client.post("/console/settings/webhooks", headers=HTML, data={
        "_csrf": admin.csrf, "url": url, "events": ["view.opened", "file.uploaded"]})
    assert made.status_code == 201, made.text
    secret = re.search(r'<input id="new-secret" type="text" readonly value="(whsec_[^"]+)"',
                       made.text)
    assert secret
    vault.secrets.append(secret.group(1))
    assert "<script>alert(1)</script>" not in made.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in made.text
    assert 'aria-label="Delivery log of https://hooks.example.com' in made.text
    again = admin.client.get("/console/settings", headers=HTML).text
    assert secret.group(1) not in again and "No delivery yet." in again
    endpoint = re.search(r'action="/console/settings/webhooks/(ep_[0-9a-f]+)/delete"', again)
    assert endpoint
    watched = auditor.client.get("/console/settings", headers=HTML).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in watched and "Add endpoint" not in watched
    for path in ("/console/settings/webhooks", f"/console/settings/webhooks/{endpoint[1]}/delete"):
        refused = auditor.post(path, url="https://other.example.com/")
        assert refused.status_code == 403
        assert MANAGE_REFUSED.format("auditor") in refused.text
    assert_json_error(admin.client.post("/console/settings/webhooks", data={
        "_csrf": admin.csrf, "url": "ftp://files.example.com/", "events": "view.opened"}), 400,
        "url is not a valid http:// or https:// address")
    gone = admin.post(f"/console/settings/webhooks/{endpoint[1]}/delete")
    assert gone.status_code == 303
    assert gone.headers["Location"] == "/console/settings?done=webhook-deleted"
    assert endpoint[1] not in admin.client.get("/console/settings", headers=HTML).text

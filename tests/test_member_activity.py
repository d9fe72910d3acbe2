"""Who did what, through a real vaultd and its real SMTP server: every account action a signed-in
member takes (sign-in, a failed sign-in, members, keys, webhooks, branding, sign-out) is in the
activity log with that member as its actor, newest first, in the pages and the export; a
stranger's failed sign-in is recorded nowhere; a person in two accounts has their sign-in in
both. And a member removed or demoted by an admin (the API or `vault-admin`) loses the session
they have open at once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests import documents
from tests.console_auth import (
    NOT_SIGNED_IN,
    WRONG_CODE,
    ask_code,
    browser,
    console_vault,
    mailed_code,
    new_member,
    sign_in,
)
from tests.http_helpers import assert_json_error, created
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HOOK = {"url": "https://hooks.example.com/in", "events": ["agreement.accepted"]}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("activity") / "data", mail) as server:
        yield server


class SignedIn:
    """A signed-in member's browser: the console's API with the session's CSRF token."""

    def __init__(self, client: httpx.Client, body: dict[str, Any]) -> None:
        self.client, self.csrf = client, body["csrfToken"]

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-CSRF-Token": self.csrf, **kwargs.pop("headers", {})}
        return self.client.request(method, f"/console/api/{path}", headers=headers, **kwargs)


def activity(vault: VaultProcess, key: str) -> list[dict[str, Any]]:
    with vault.client(key) as api:
        entries: list[dict[str, Any]] = api.get("/activity", params={"perPage": 200}
                                                ).json()["entries"]
    return entries


def stored_with_label(vault: VaultProcess, label: str) -> int:
    async def count(db: Any) -> int:
        return int(await db.activity.count_documents({"actor.label": label}))

    found: int = vault.run_service(count)
    return found


def file_entries(vault: VaultProcess, file_id: str) -> list[dict[str, Any]]:
    async def read(db: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await db.access_log.find({"fileId": file_id}).to_list()
        return found

    entries: list[dict[str, Any]] = vault.run_service(read)
    return entries


def test_every_account_action_of_a_member_is_logged_with_them_newest_first(
        vault: VaultProcess, mail: MailServer) -> None:
    account_id, key = vault.new_account(name="Ledger Co", plan="business")
    boss = new_member(vault, account_id, "boss@ledger.example")
    with browser(vault) as client:
        ip = client.headers["X-Forwarded-For"]
        member = SignedIn(client, sign_in(client, vault, mail, "boss@ledger.example"))
        # A wrong code for the member's address, then for a stranger's: each answered alike.
        with browser(vault) as guesser:
            mailed_code(guesser, mail, "boss@ledger.example")
            assert ask_code(guesser, "nobody@ledger.example").status_code == 202
            for email in ("nobody@ledger.example", "boss@ledger.example"):
                wrong = guesser.post("/console/auth/sign-in", json={"email": email,
                                                                    "code": "000000"})
                assert_json_error(wrong, 400, WRONG_CODE)
            guesser_ip = guesser.headers["X-Forwarded-For"]
        wait_until(lambda: activity(vault, key)[0]["action"] == "signin.failed", timeout=30,
                   what="the failed sign-in in the activity log")
        temp = created(member.api("POST", "members", json={"email": "temp@ledger.example",
                                                           "role": "member"}))
        assert member.api("PATCH", f"members/{temp['id']}",
                          json={"role": "auditor"}).status_code == 200
        made = created(member.api("POST", "keys", json={"name": "ci", "role": "member"}))
        vault.secrets.append(made["key"])
        assert made["createdBy"] == {"kind": "member", "id": boss,
                                     "label": "boss@ledger.example"}
        # A file action keeps the access log's entry, with the member beside it.
        uploaded = created(member.api("POST", "files", content=documents.pdf(1), headers={
            "Content-Type": "application/pdf", "X-CSRF-Token": member.csrf}))
        assert member.api("DELETE", f"keys/{made['id']}").status_code == 204
        hook = created(member.api("POST", "webhooks", json=HOOK))
        assert member.api("DELETE", f"webhooks/{hook['id']}").status_code == 204
        branded = client.post("/console/settings/branding",
                              data={"_csrf": member.csrf, "branding": "Ledger Chambers"})
        assert branded.status_code == 303, branded.text
        assert member.api("DELETE", f"members/{temp['id']}").status_code == 204
        assert client.post("/console/auth/sign-out",
                           headers={"X-CSRF-Token": member.csrf}).status_code == 204
    entries = activity(vault, key)
    assert [(e["action"], e.get("target"), e.get("detail")) for e in entries] == [
        ("signout", None, {"how": "signed out"}),
        ("member.removed", "temp@ledger.example", None),
        ("branding.changed", None, {"branding": "Ledger Chambers"}),
        ("webhook.deleted", hook["id"], None),
        ("webhook.created", hook["id"], None),
        ("key.revoked", made["id"], {"name": "ci"}),
        ("key.created", made["id"], {"name": "ci", "role": "member"}),
        ("member.role_changed", "temp@ledger.example", {"from": "member", "to": "auditor"}),
        ("member.added", "temp@ledger.example", {"role": "member"}),
        ("signin.failed", None, {"method": "code"}),
        ("signin", None, {"method": "code"}),
    ]
    actor = {"kind": "member", "id": boss, "label": "boss@ledger.example"}
    assert all(e["actor"] == actor for e in entries)
    assert [e["ip"] for e in entries] == [ip] * 9 + [guesser_ip, ip]
    assert [(e["action"], e["actor"]) for e in file_entries(vault, uploaded["id"])] == [
        ("upload", actor)]
    # The stranger's failed try was answered as the member's and is recorded nowhere.
    assert stored_with_label(vault, "nobody@ledger.example") == 0
    with vault.client(key) as api:
        lines = api.get("/activity", params={"format": "jsonl"}).text.splitlines()
        rows = api.get("/activity", params={"format": "csv"}).text.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [e["id"] for e in entries]
    assert len(rows) == len(entries) + 1 and rows[-1].split(",")[1:5] == [
        "signin", "member", boss, "boss@ledger.example"]


def test_a_person_in_two_accounts_signs_in_to_both_and_a_revoked_session_is_logged(
        vault: VaultProcess, mail: MailServer) -> None:
    first, first_key = vault.new_account(name="First Books")
    second, second_key = vault.new_account(name="Second Books")
    in_first = new_member(vault, first, "both@books.example")
    in_second = new_member(vault, second, "both@books.example", role="auditor")
    with browser(vault) as laptop, browser(vault) as phone:
        mine = SignedIn(laptop, sign_in(laptop, vault, mail, "both@books.example"))
        on_phone = sign_in(phone, vault, mail, "both@books.example")
        chosen = phone.post("/console/auth/account", json={"accountId": second},
                            headers={"X-CSRF-Token": on_phone["csrfToken"]})
        assert chosen.status_code == 200, chosen.text
        listed = laptop.get("/console/auth/sessions").json()["sessions"]
        other = next(s["id"] for s in listed if not s["current"])
        assert laptop.delete(f"/console/auth/sessions/{other}",
                             headers={"X-CSRF-Token": mine.csrf}).status_code == 204
        assert_json_error(phone.get("/console/auth/session"), 401, NOT_SIGNED_IN)
    assert [(e["action"], e["actor"]["id"]) for e in activity(vault, first_key)] == [
        ("signin", in_first), ("signin", in_first)]
    revoked, *signins = activity(vault, second_key)
    assert (revoked["action"], revoked["actor"]["id"], revoked["detail"]) == (
        "signout", in_second, {"how": "revoked"})
    assert [(e["action"], e["actor"]["id"]) for e in signins] == [
        ("signin", in_second), ("signin", in_second)]


def by_api(method: str, body: dict[str, str] | None) -> Callable[..., None]:
    def act(vault: VaultProcess, key: str, account_id: str, member_id: str) -> None:
        with vault.client(key) as api:
            answer = api.request(method, f"/members/{member_id}", json=body)
        assert answer.status_code in (200, 204), answer.text

    return act


def by_operator(vault: VaultProcess, key: str, account_id: str, member_id: str) -> None:
    vault.admin("members", "set-role", account_id, f"leaver-{account_id}@exit.example",
                "auditor")


@pytest.mark.parametrize("change", [by_api("PATCH", {"role": "auditor"}),
                                    by_api("DELETE", None), by_operator],
                         ids=["role-changed-by-api", "removed-by-api", "role-changed-by-cli"])
def test_a_member_changed_by_an_admin_loses_their_open_session_at_once(
        vault: VaultProcess, mail: MailServer, change: Callable[..., None]) -> None:
    account_id, key = vault.new_account(name="Exit Co")
    email = f"leaver-{account_id}@exit.example"  # one account each: chosen at sign-in
    member_id = new_member(vault, account_id, email, role="member")
    with browser(vault) as laptop, browser(vault) as phone:  # every session of theirs ends
        opened = [(client, sign_in(client, vault, mail, email)) for client in (laptop, phone)]
        for client, _ in opened:
            assert client.get("/console/api/files").status_code == 200
        change(vault, key, account_id, member_id)
        for client, body in opened:
            assert_json_error(client.get("/console/api/files"), 401, NOT_SIGNED_IN)
            refused = client.post("/console/api/views", json={"fileId": "x"},
                                  headers={"X-CSRF-Token": body["csrfToken"]})
            assert_json_error(refused, 401, NOT_SIGNED_IN)
            assert_json_error(client.get("/console/auth/session"), 401, NOT_SIGNED_IN)

"""Members' sessions through a real vaultd: the cookie, sign-out, revocation, the idle and
absolute limits, a removed or demoted member's open session, the /console/api mirror, and the
session id kept out of the database and the log. Each attack is made with a real cookie."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests import documents as docs
from tests.console_auth import (
    NOT_SIGNED_IN,
    PLAIN_COOKIE,
    browser,
    change,
    console_vault,
    mailed_code,
    new_member,
    sign_in,
)
from tests.http_helpers import MISSING_KEY, assert_json_error, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from vaultd.secrets import digest
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("sessions") / "data", mail) as server:
        yield server


@pytest.fixture
def account(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account(name="Quay Partners")


def set_times(vault: VaultProcess, session_id: str, **ago: timedelta) -> None:
    """Moves the session's recorded times into the past, as that much time passing would."""
    async def move(db: Any) -> None:
        now = utcnow()
        await db.member_sessions.update_one({"_id": digest(session_id)}, {
            "$set": {field: now - delta for field, delta in ago.items()}})

    vault.run_service(move)


def test_the_cookie_is_http_only_lax_host_wide_and_not_secure_over_plain_http(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    new_member(vault, account[0], "cookie@quay.example")
    with browser(vault) as client:
        code = mailed_code(client, mail, "cookie@quay.example")
        response = client.post("/console/auth/sign-in",
                               json={"email": "cookie@quay.example", "code": code})
        assert response.status_code == 200
        header = response.headers["Set-Cookie"]
        vault.secrets.append(client.cookies[PLAIN_COOKIE])
        attributes = {part.strip().split("=")[0].lower() for part in header.split(";")}
        assert header.startswith(f"{PLAIN_COOKIE}=")
        assert {"httponly", "path", "samesite"} <= attributes and "secure" not in attributes
        assert "SameSite=Lax" in header and "Path=/" in header and "Domain" not in header


def test_sign_out_ends_the_session_on_the_server_so_a_stolen_cookie_is_refused(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    new_member(vault, account[0], "out@quay.example")
    with browser(vault) as client:
        body = sign_in(client, vault, mail, "out@quay.example")
        stolen = client.cookies[PLAIN_COOKIE]
        out = client.post("/console/auth/sign-out", headers={"X-CSRF-Token": body["csrfToken"]})
        assert out.status_code == 204
    with browser(vault) as thief:
        cookie = {"Cookie": f"{PLAIN_COOKIE}={stolen}"}
        assert_json_error(thief.get("/console/auth/session", headers=cookie), 401, NOT_SIGNED_IN)
        assert_json_error(thief.get("/console/api/files", headers=cookie), 401, NOT_SIGNED_IN)


def test_a_member_lists_their_sessions_and_revokes_the_other_one(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    new_member(vault, account[0], "two@quay.example")
    with browser(vault) as laptop, browser(vault) as phone:
        mine = sign_in(laptop, vault, mail, "two@quay.example")
        sign_in(phone, vault, mail, "two@quay.example")
        listed = laptop.get("/console/auth/sessions").json()["sessions"]
        assert len(listed) == 2 and sum(s["current"] for s in listed) == 1
        for session in listed:  # ids shown are not the cookies' secrets
            assert session["id"] not in (laptop.cookies[PLAIN_COOKIE], phone.cookies[PLAIN_COOKIE])
        other = next(s["id"] for s in listed if not s["current"])
        revoked = laptop.delete(f"/console/auth/sessions/{other}",
                                headers={"X-CSRF-Token": mine["csrfToken"]})
        assert revoked.status_code == 204
        assert_json_error(phone.get("/console/auth/session"), 401, NOT_SIGNED_IN)
        assert laptop.get("/console/auth/session").status_code == 200
        again = laptop.delete(f"/console/auth/sessions/{other}",
                              headers={"X-CSRF-Token": mine["csrfToken"]})
        assert_json_error(again, 404, "no such session")


def test_another_persons_session_cannot_be_listed_or_revoked(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    new_member(vault, account[0], "mallory@quay.example")
    new_member(vault, account[0], "alice@quay.example")
    with browser(vault) as mallory, browser(vault) as alice:
        attacker = sign_in(mallory, vault, mail, "mallory@quay.example")
        sign_in(alice, vault, mail, "alice@quay.example")
        victims = alice.get("/console/auth/sessions").json()["sessions"]
        assert [s["current"] for s in victims] == [True]
        listed = mallory.get("/console/auth/sessions").json()["sessions"]
        assert victims[0]["id"] not in {s["id"] for s in listed}
        # Even knowing the victim's session id, the attacker ends nothing.
        refused = mallory.delete(f"/console/auth/sessions/{victims[0]['id']}",
                                 headers={"X-CSRF-Token": attacker["csrfToken"]})
        assert_json_error(refused, 404, "no such session")
        assert alice.get("/console/auth/session").status_code == 200


def test_an_idle_session_and_one_past_its_lifetime_end(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    new_member(vault, account[0], "idle@quay.example")
    with browser(vault) as idle, browser(vault) as old:
        sign_in(idle, vault, mail, "idle@quay.example")
        sign_in(old, vault, mail, "idle@quay.example")
        # Default settings: 60 idle minutes, 12 hours at most.
        set_times(vault, idle.cookies[PLAIN_COOKIE], lastSeenAt=timedelta(minutes=59))
        assert idle.get("/console/auth/session").status_code == 200  # and it moves on
        set_times(vault, idle.cookies[PLAIN_COOKIE], lastSeenAt=timedelta(minutes=61))
        assert_json_error(idle.get("/console/auth/session"), 401, NOT_SIGNED_IN)
        set_times(vault, old.cookies[PLAIN_COOKIE], expiresAt=timedelta(seconds=1))
        assert_json_error(old.get("/console/auth/session"), 401, NOT_SIGNED_IN)


@pytest.mark.parametrize("change_made", [{"state": "removed"}, {"role": "auditor"}])
def test_a_removed_or_demoted_members_open_session_is_refused_at_once(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer,
        change_made: dict[str, str]) -> None:
    email = f"{change_made.get('state', 'demoted')}@quay.example"
    member = new_member(vault, account[0], email)
    with browser(vault) as client:
        sign_in(client, vault, mail, email)
        assert client.get("/console/api/files").status_code == 200
        change(vault, member, **change_made)
        assert_json_error(client.get("/console/api/files"), 401, NOT_SIGNED_IN)
        assert_json_error(client.get("/console/auth/session"), 401, NOT_SIGNED_IN)


def test_the_api_mirror_acts_as_the_member_and_v1_still_wants_a_key(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    account_id, key = account
    new_member(vault, account_id, "api@quay.example", role="member")
    with vault.client(key) as api:
        upload_ok(api, docs.pdf(pages=1), name="Lease.pdf")
    with browser(vault) as client:
        body = sign_in(client, vault, mail, "api@quay.example")
        files = client.get("/console/api/files").json()
        assert [f["name"] for f in files["files"]] == ["Lease.pdf"]
        assert client.get("/console/api/account").json()["id"] == account_id
        who = client.get("/console/auth/session").json()
        assert who["member"]["role"] == "member" and who["csrfToken"] == body["csrfToken"]
        # An unsafe call through the mirror: the streamed upload, with the session's token.
        pdf = docs.pdf(pages=1)
        uploaded = client.post("/console/api/files", content=pdf, headers={
            "Content-Type": "application/pdf", "x-file-name": "Deed.pdf",
            "X-CSRF-Token": body["csrfToken"]})
        assert uploaded.status_code == 201, uploaded.text
        names = {f["name"] for f in client.get("/console/api/files").json()["files"]}
        assert names == {"Lease.pdf", "Deed.pdf"}
        # /v1 is the key's alone: the signed-in member's cookie opens nothing there.
        assert_json_error(client.get("/v1/files"), 401, MISSING_KEY)
        assert_json_error(client.get("/v1/account"), 401, MISSING_KEY)


def test_a_person_in_two_accounts_chooses_one_before_the_api(
        vault: VaultProcess, mail: MailServer) -> None:
    first, _ = vault.new_account(name="First Co")
    second, _ = vault.new_account(name="Second Co")
    new_member(vault, first, "both@twoaccounts.example")
    new_member(vault, second, "both@twoaccounts.example", role="auditor")
    with browser(vault) as client:
        body = sign_in(client, vault, mail, "both@twoaccounts.example")
        assert body["accountId"] is None and len(body["accounts"]) == 2
        assert_json_error(client.get("/console/api/files"), 403,
                          "choose an account first: POST /console/auth/account")
        csrf = {"X-CSRF-Token": body["csrfToken"]}
        malformed = client.post("/console/auth/account", json={"accountId": 5}, headers=csrf)
        assert_json_error(malformed, 400, "accountId must be a non-empty string")
        stranger, _ = vault.new_account(name="Not Theirs")
        refused = client.post("/console/auth/account", json={"accountId": stranger},
                              headers=csrf)
        assert_json_error(refused, 404, "you are not a member of that account")
        chosen = client.post("/console/auth/account", json={"accountId": second}, headers=csrf)
        assert chosen.status_code == 200, chosen.text
        assert chosen.json()["member"]["role"] == "auditor"
        assert client.get("/console/api/account").json()["id"] == second


def test_the_session_id_is_neither_stored_nor_logged(
        vault: VaultProcess, account: tuple[str, str], mail: MailServer) -> None:
    new_member(vault, account[0], "secret@quay.example")
    with browser(vault) as client:
        body = sign_in(client, vault, mail, "secret@quay.example")
        session_id = client.cookies[PLAIN_COOKIE]
        client.get("/console/auth/session")

    async def everything(db: Any) -> str:
        dump = []
        for name in await db.database.list_collection_names():
            dump.extend([str(doc) async for doc in db.raw(name).find({})])
        return "\n".join(dump)

    stored = vault.run_service(everything)
    assert digest(session_id) in stored  # the hash is the key
    assert session_id not in stored and body["csrfToken"] not in stored
    log = vault.log_text()
    assert session_id not in log and body["csrfToken"] not in log

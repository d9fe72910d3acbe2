"""The operator's one-time sign-in link, through the real `vault-admin` and a real vaultd:
used once (two at once: one wins), only within 15 minutes, and the way in where no SMTP server
is set; on an https deployment the cookie is `__Host-` prefixed and Secure, and a plain cookie
planted beside it is not read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.console_auth import NOT_SIGNED_IN, browser, console_vault, new_member
from tests.http_helpers import assert_json_error
from tests.vault_process import VaultProcess
from vaultd.secrets import digest
from vaultd.services.members import activity

pytestmark = pytest.mark.slow  # starts its own vaultd processes

LINK_NOT_VALID = "this sign-in link is not valid: it was used, has expired or never existed"
PUBLIC = "https://vault.example"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("link") / "data", None) as server:
        yield server


@pytest.fixture(scope="module")
def https_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("link-https") / "data", None,
                       VAULTD_PUBLIC_URL=PUBLIC) as server:
        yield server


def link_token(vault: VaultProcess, account_id: str, email: str) -> str:
    """The token of the URL `vault-admin members sign-in-link` prints."""
    url = vault.admin("members", "sign-in-link", account_id, email).stdout.strip()
    path = urlsplit(url).path
    assert path.startswith("/console/auth/link/"), url
    token = path.rsplit("/", 1)[1]
    vault.secrets.append(token)
    return token


def test_the_link_signs_in_once_and_lands_on_the_console(vault: VaultProcess) -> None:
    account_id, _ = vault.new_account(name="First Admin Co")
    new_member(vault, account_id, "root@first.example", state="invited")
    url = vault.admin("members", "sign-in-link", account_id, "root@first.example").stdout
    assert url.strip().startswith("http://127.0.0.1:")  # no public_url: the listener's own
    token = urlsplit(url.strip()).path.rsplit("/", 1)[1]
    vault.secrets.append(token)
    with browser(vault) as client:
        opened = client.get(f"/console/auth/link/{token}")
        assert opened.status_code == 303 and opened.headers["Location"] == "/console"
        vault.secrets.append(client.cookies["vaultd_session"])
        assert client.get("/console/auth/session").json()["account"]["id"] == account_id
        home = client.get("/console")
        assert home.status_code == 303 and home.headers["Location"] == "/console/files"
        page = client.get("/console/files")
        assert page.status_code == 200 and "root@first.example" in page.text
        assert "<script>" not in page.text  # scripts only from /assets/console/
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
    logged = vault.run_service(lambda db: activity.page(db, account_id))
    assert [(e["action"], e["actor"]["label"], e.get("detail")) for e in logged.entries] == [
        ("signin", "root@first.example", {"method": "link"})]
    with browser(vault) as again:
        assert_json_error(again.get(f"/console/auth/link/{token}"), 404, LINK_NOT_VALID)
        signed_out = again.get("/console")
        assert signed_out.status_code == 303
        assert signed_out.headers["Location"] == "/console/sign-in"


def test_two_uses_at_once_sign_in_one(vault: VaultProcess) -> None:
    account_id, _ = vault.new_account(name="Race Co")
    new_member(vault, account_id, "race@race.example")
    token = link_token(vault, account_id, "race@race.example")
    answers: list[httpx.Response] = []
    start = threading.Barrier(2)

    def use() -> None:
        with browser(vault) as client:
            start.wait()
            answers.append(client.get(f"/console/auth/link/{token}"))

    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    answers.sort(key=lambda answer: answer.status_code)
    assert [answer.status_code for answer in answers] == [303, 404]
    vault.secrets.append(answers[0].cookies["vaultd_session"])
    assert_json_error(answers[1], 404, LINK_NOT_VALID)


def test_a_link_older_than_15_minutes_is_refused(vault: VaultProcess) -> None:
    account_id, _ = vault.new_account(name="Late Co")
    new_member(vault, account_id, "late@late.example")
    token = link_token(vault, account_id, "late@late.example")

    async def sixteen_minutes_later(db: Any) -> None:
        link = await db.sign_in_links.find_one({"_id": digest(token)})
        assert link is not None
        await db.sign_in_links.update_one({"_id": digest(token)}, {
            "$set": {"expiresAt": link["expiresAt"] - timedelta(minutes=16)}})

    vault.run_service(sixteen_minutes_later)
    with browser(vault) as client:
        assert_json_error(client.get(f"/console/auth/link/{token}"), 404, LINK_NOT_VALID)


def test_the_operator_cannot_make_a_link_for_a_non_member(vault: VaultProcess) -> None:
    account_id, _ = vault.new_account(name="Nobody Co")
    result = vault.admin("members", "sign-in-link", account_id, "nobody@nobody.example",
                         expect_ok=False)
    assert result.returncode != 0 and not result.stdout
    assert (f"nobody@nobody.example is not an invited or active member of account "
            f"{account_id}") in result.stderr


def test_on_https_the_cookie_is_host_prefixed_and_secure(https_vault: VaultProcess) -> None:
    account_id, _ = https_vault.new_account(name="Secure Co")
    new_member(https_vault, account_id, "tls@secure.example")
    url = https_vault.admin("members", "sign-in-link", account_id,
                            "tls@secure.example").stdout.strip()
    assert url.startswith(f"{PUBLIC}/console/auth/link/")
    token = url.rsplit("/", 1)[1]
    https_vault.secrets.append(token)
    with httpx.Client(base_url=https_vault.url, timeout=60) as client:
        opened = client.get(f"/console/auth/link/{token}")
        assert opened.status_code == 303
        header = opened.headers["Set-Cookie"]
        assert header.startswith("__Host-vaultd_session=")
        session_id = header.split(";", 1)[0].split("=", 1)[1]
        https_vault.secrets.append(session_id)
        for attribute in ("Secure", "HttpOnly", "SameSite=Lax", "Path=/"):
            assert attribute in header, header
        assert "Domain" not in header
        own = {"Cookie": f"__Host-vaultd_session={session_id}"}
        assert client.get("/console/auth/session", headers=own).status_code == 200
        # A plain cookie (which a plain-http page could have planted) is not read on https.
        planted = client.get("/console/auth/session",
                             headers={"Cookie": f"vaultd_session={session_id}"})
        assert_json_error(planted, 401, NOT_SIGNED_IN)
        # The site's own origin is public_url's: the listener's address is another origin.
        out = client.post("/console/auth/sign-out", headers={
            **own, "Origin": https_vault.url, "X-CSRF-Token": "x"})
        assert_json_error(out, 403, "cross-site request refused: the Origin is not this site's")


def test_without_smtp_a_code_is_refused_for_everyone_alike(vault: VaultProcess) -> None:
    account_id, _ = vault.new_account(name="No Mail Co")
    new_member(vault, account_id, "member@nomail.example")
    with browser(vault) as client:
        for email in ("member@nomail.example", "stranger@nomail.example"):
            assert_json_error(client.post("/console/auth/code", json={"email": email}), 503,
                              "sign-in by mailed code is off here (smtp.host is not set): ask "
                              "the operator for a sign-in link")

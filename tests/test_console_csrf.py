"""CSRF and Origin, attacked: a signed-in member's cookie sent by another site, without the
token, with another session's token, or with no Origin at all; each refused with its 403 and
nothing changed. A cross-site form cannot sign a victim in to the attacker's account either."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import (
    NO_CSRF,
    NO_ORIGIN,
    OTHER_ORIGIN,
    WRONG_CSRF,
    browser,
    console_vault,
    mailed_code,
    new_member,
    sign_in,
)
from tests.http_helpers import assert_json_error, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

EVIL = "https://evil.example"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("csrf") / "data", mail) as server:
        yield server


@pytest.fixture
def victim(vault: VaultProcess, mail: MailServer) -> Iterator[tuple[httpx.Client, str, str]]:
    """A signed-in member's browser, their CSRF token, and a file of theirs to attack."""
    account_id, key = vault.new_account(name="Victim Co")
    new_member(vault, account_id, f"victim-{account_id[:8]}@victim.example")
    with vault.client(key) as api:
        file_id: str = upload_ok(api, docs.pdf(pages=1), name="Target.pdf")["id"]
    with browser(vault) as client:
        token = sign_in(client, vault, mail, f"victim-{account_id[:8]}@victim.example")
        yield client, token["csrfToken"], file_id


def still_there(client: httpx.Client, file_id: str) -> bool:
    return client.get(f"/console/api/files/{file_id}").status_code == 200


def test_a_cross_site_request_with_the_victims_cookie_and_token_is_refused(
        victim: tuple[httpx.Client, str, str]) -> None:
    client, csrf, file_id = victim
    attack = client.delete(f"/console/api/files/{file_id}",
                           headers={"Origin": EVIL, "X-CSRF-Token": csrf})
    assert_json_error(attack, 403, OTHER_ORIGIN)
    out = client.post("/console/auth/sign-out", headers={"Origin": EVIL, "X-CSRF-Token": csrf})
    assert_json_error(out, 403, OTHER_ORIGIN)
    assert still_there(client, file_id)


def test_a_request_without_the_token_is_refused(victim: tuple[httpx.Client, str, str]) -> None:
    client, _, file_id = victim
    assert_json_error(client.delete(f"/console/api/files/{file_id}"), 403, NO_CSRF)
    assert_json_error(client.post("/console/auth/sign-out"), 403, NO_CSRF)
    assert still_there(client, file_id)


def test_another_sessions_token_is_refused(vault: VaultProcess, mail: MailServer,
                                           victim: tuple[httpx.Client, str, str]) -> None:
    client, _, file_id = victim
    account_id, _ = vault.new_account(name="Attacker Co")
    new_member(vault, account_id, "attacker@evil.example")
    with browser(vault) as attacker:
        theirs = sign_in(attacker, vault, mail, "attacker@evil.example")["csrfToken"]
    attack = client.delete(f"/console/api/files/{file_id}", headers={"X-CSRF-Token": theirs})
    assert_json_error(attack, 403, WRONG_CSRF)
    assert still_there(client, file_id)


def test_no_origin_and_no_referer_is_refused_and_a_same_site_referer_passes(
        vault: VaultProcess, victim: tuple[httpx.Client, str, str]) -> None:
    client, csrf, file_id = victim
    bare = httpx.Client(base_url=vault.url, cookies=client.cookies,
                        headers={"X-Forwarded-For": client.headers["X-Forwarded-For"]})
    with bare:
        attack = bare.delete(f"/console/api/files/{file_id}", headers={"X-CSRF-Token": csrf})
        assert_json_error(attack, 403, NO_ORIGIN)
        assert still_there(client, file_id)
        own_page = bare.delete(f"/console/api/files/{file_id}", headers={
            "X-CSRF-Token": csrf, "Referer": f"{vault.url}/console/files"})
        assert own_page.status_code == 204, own_page.text
    assert not still_there(client, file_id)


def test_a_forms_csrf_field_is_accepted_for_the_same_session(
        victim: tuple[httpx.Client, str, str]) -> None:
    client, csrf, _ = victim
    wrong = client.post("/console/auth/sign-out", data={"_csrf": csrf[:-2] + "xx"})
    assert_json_error(wrong, 403, WRONG_CSRF)
    assert client.post("/console/auth/sign-out", data={"_csrf": csrf}).status_code == 204


def test_a_cross_site_form_cannot_sign_a_victim_in_to_the_attackers_account(
        vault: VaultProcess, mail: MailServer) -> None:
    account_id, _ = vault.new_account(name="Planted Co")
    new_member(vault, account_id, "planter@evil.example")
    with browser(vault) as attacker:
        code = mailed_code(attacker, mail, "planter@evil.example")
    with browser(vault, Origin=EVIL) as victim_browser:
        planted = victim_browser.post("/console/auth/sign-in",
                                      json={"email": "planter@evil.example", "code": code})
        assert_json_error(planted, 403, OTHER_ORIGIN)
        assert "vaultd_session" not in victim_browser.cookies
        asked = victim_browser.post("/console/auth/code", json={"email": "x@victim.example"})
        assert_json_error(asked, 403, OTHER_ORIGIN)

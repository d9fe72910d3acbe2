"""The console's pages over HTTP, without a browser: headers, the sign-in forms (a code mailed
through the real SMTP server), redirects without a session, the static assets, the CSRF field
of the sign-out form, and errors in words for a browser and as JSON for anything else."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.console_auth import (
    NO_CSRF,
    OTHER_ORIGIN,
    PLAIN_COOKIE,
    browser,
    console_vault,
    new_member,
)
from tests.http_helpers import assert_json_error
from tests.mail_server import MailServer, code_in
from tests.vault_process import VaultProcess
from vaultd.web.console_page import CONSOLE_CSP

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("console") / "data", mail) as server:
        yield server


def test_the_sign_in_page_has_its_labelled_fields_and_the_strict_csp(vault: VaultProcess) -> None:
    with browser(vault) as client:
        page = client.get("/console/sign-in", headers=HTML)
    assert page.status_code == 200
    assert page.headers["Content-Security-Policy"] == CONSOLE_CSP
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["Cache-Control"] == "no-store"
    for control in ('<label for="email">Email</label>', '<label for="code">Code</label>',
                    '<button type="submit">Send code</button>',
                    '<button type="submit">Sign in</button>'):
        assert control in page.text
    assert "<script>" not in page.text and "style=" not in page.text


def test_a_browser_without_a_session_is_sent_to_sign_in(vault: VaultProcess) -> None:
    with browser(vault) as client:
        for path in ("/console", "/console/files", "/console/account"):
            response = client.get(path, headers=HTML)
            assert response.status_code == 303, path
            assert response.headers["Location"] == "/console/sign-in"


def test_a_script_without_a_session_gets_the_json_401(vault: VaultProcess) -> None:
    with browser(vault) as client:
        assert_json_error(client.post("/console/sign-out"), 401,
                          "not signed in (or the session has ended): sign in again")


def test_signing_in_with_the_forms_opens_a_session_and_signing_out_ends_it(
        vault: VaultProcess, mail: MailServer) -> None:
    account_id, _ = vault.new_account(name="Forms Co")
    email = f"forms-{account_id[:8]}@forms.example"
    new_member(vault, account_id, email)
    with browser(vault) as client:
        before = mail.inbox.count()
        sent = client.post("/console/sign-in/code", data={"email": email}, headers=HTML)
        assert sent.status_code == 200
        assert f"If {email} is a member&#x27;s address" in sent.text
        code = code_in(mail.inbox.wait_for(before + 1))
        opened = client.post("/console/sign-in", data={"email": email, "code": code},
                             headers=HTML)
        assert opened.status_code == 303 and opened.headers["Location"] == "/console/files"
        cookie = client.cookies[PLAIN_COOKIE]
        vault.secrets.append(cookie)
        home = client.get("/console", headers=HTML)
        assert home.status_code == 303 and home.headers["Location"] == "/console/files"
        assert_json_error(client.post("/console/sign-out"), 403, NO_CSRF)
        assert_json_error(client.post("/console/sign-out", headers={"Origin": "https://evil.example"}),
                          403, OTHER_ORIGIN)


def test_a_wrong_code_is_shown_on_the_form_in_words(vault: VaultProcess) -> None:
    with browser(vault) as client:
        refused = client.post("/console/sign-in", headers=HTML,
                              data={"email": "nobody@forms.example", "code": "123456"})
    assert refused.status_code == 400
    assert "the code is wrong, expired or spent: ask for a new one" in refused.text
    assert '<label for="code">Code</label>' in refused.text


def test_the_console_assets_are_served_with_the_same_headers(vault: VaultProcess) -> None:
    with browser(vault) as client:
        style = client.get("/assets/console/console.css")
        script = client.get("/assets/console/console.js")
        outside = client.get("/assets/console/..%2F..%2Fconsole_page.py")
    assert style.status_code == 200 and ":focus-visible" in style.text
    assert script.status_code == 200 and script.headers["Content-Security-Policy"] == CONSOLE_CSP
    assert outside.status_code == 404

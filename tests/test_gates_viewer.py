"""The hosted viewer's gates over HTTP: the cookie session, its attributes, and the ways around
it (a direct page URL, a cookie replayed on another link, a session from before a revoke)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.gate_helpers import COOKIE, gated_link, pending
from tests.http_helpers import LINK_GONE, assert_json_error, upload_ok
from tests.vault_process import VaultProcess

PASSCODE = "blue harbour"


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Plans.pdf")


@contextmanager
def open_gate(vault: VaultProcess, token: str) -> Iterator[httpx.Client]:
    """A cookie-keeping client that opened the link's passcode screen."""
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        response = browser.get(f"/v/{token}")
        assert response.status_code == 200
        assert 'id="passcode-form"' in response.text
        vault.secrets.append(browser.cookies[COOKIE])
        yield browser


def test_the_session_cookie_is_http_only_strict_and_scoped_to_the_link(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    response = httpx.get(f"{vault.url}/v/{token}")
    cookie = response.headers["set-cookie"]
    vault.secrets.append(cookie.split(";")[0].split("=", 1)[1])
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "path", "max-age", "samesite"} <= attributes
    assert f"Path=/v/{token}" in cookie and "SameSite=Strict" in cookie
    assert "secure" not in attributes  # public_url is http in the tests
    assert "Content-Security-Policy" in response.headers
    assert "<script>" not in response.text and "style=" not in response.text


def test_the_passcode_screen_opens_the_document_once_the_post_passes(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    with open_gate(vault, token) as browser:
        assert_json_error(browser.get(f"/v/{token}/pages/1"), 403, pending("passcode"))
        wrong = browser.post(f"/v/{token}/session/passcode", json={"passcode": "nope"})
        assert_json_error(wrong, 403, "passcode is not correct")
        right = browser.post(f"/v/{token}/session/passcode", json={"passcode": PASSCODE})
        assert right.status_code == 200 and right.json() == {"pending": []}
        assert 'id="pages"' in browser.get(f"/v/{token}").text
        assert browser.get(f"/v/{token}/pages/1").status_code == 200


def test_a_direct_page_url_without_a_session_gets_no_page(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/pages/1"), 403, pending("passcode"))
    forged = {"Cookie": f"{COOKIE}={'A' * 43}"}
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/pages/1", headers=forged), 403,
                      pending("passcode"))


def test_a_cookie_replayed_on_another_link_passes_nothing(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    first = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    second = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    with open_gate(vault, first) as browser:
        browser.post(f"/v/{first}/session/passcode", json={"passcode": PASSCODE})
        session = browser.cookies[COOKIE]
    replay = {"Cookie": f"{COOKIE}={session}"}
    assert_json_error(httpx.get(f"{vault.url}/v/{second}/pages/1", headers=replay), 403,
                      pending("passcode"))
    response = httpx.post(f"{vault.url}/v/{second}/session/passcode", headers=replay,
                          json={"passcode": PASSCODE})
    assert_json_error(response, 404, "viewer session not found or ended: open a new one")


def test_a_cookie_from_before_a_revoke_ends_with_the_link(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    with open_gate(vault, token) as browser:
        browser.post(f"/v/{token}/session/passcode", json={"passcode": PASSCODE})
        assert browser.get(f"/v/{token}/pages/1").status_code == 200
        assert api.delete(f"/views/{token}").status_code == 204
        assert_json_error(browser.get(f"/v/{token}/pages/1"), 404, LINK_GONE)
        assert browser.get(f"/v/{token}").status_code == 404


def test_the_agreement_is_accepted_only_by_the_post(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    agreement = api.post("/agreements", json={"name": "NDA", "text": "Say nothing."}).json()
    token = gated_link(api, pdf_file["id"], vault, agreementId=agreement["id"])
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        page = browser.get(f"/v/{token}")
        vault.secrets.append(browser.cookies[COOKIE])
        assert "Say nothing." in page.text and 'id="agreement-form"' in page.text
        # A client that says it accepted, anywhere but in the POST, is not believed.
        claimed = browser.get(f"/v/{token}/pages/1", headers={"x-agreement-accepted": "1"},
                              params={"accepted": "true"})
        assert_json_error(claimed, 403, pending("agreement"))
        accepted = browser.post(f"/v/{token}/session/agreement", json={"name": "Bo Reader"},
                                headers={"User-Agent": "GateTest/2"})
        assert accepted.json() == {"pending": []}
        assert browser.get(f"/v/{token}/pages/1").status_code == 200
    entry = api.get(f"/files/{pdf_file['id']}/access-log?action=agreement").json()[0]
    assert entry["ip"] == "127.0.0.1"
    assert (entry["detail"]["name"], entry["detail"]["userAgent"]) == ("Bo Reader", "GateTest/2")


def test_a_link_refused_from_this_address_says_why(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, allowedIps=["198.51.100.0/24"])
    response = httpx.get(f"{vault.url}/v/{token}")
    assert response.status_code == 403
    assert "this link cannot be used from the viewer&#x27;s IP address." in response.text


def test_max_opens_on_the_hosted_viewer_counts_browsers_that_passed(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE, maxOpens=1)
    with open_gate(vault, token) as browser:
        browser.post(f"/v/{token}/session/passcode", json={"passcode": PASSCODE})
        assert browser.get(f"/v/{token}").status_code == 200  # the same session: not counted
        assert browser.get(f"/v/{token}/pages/1").status_code == 200
    with open_gate(vault, token) as second:  # a second browser: the screens, nothing spent
        passed = second.post(f"/v/{token}/session/passcode", json={"passcode": PASSCODE})
        assert_json_error(passed, 404, LINK_GONE)  # its open is the one beyond maxOpens
    assert httpx.get(f"{vault.url}/v/{token}").status_code == 404


def test_browsers_without_a_cookie_open_at_most_sixty_sessions_an_hour_per_address(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    with httpx.Client(base_url=vault.url, timeout=60) as anonymous:
        statuses = []
        for _ in range(61):  # each time as a new browser: no cookie kept
            statuses.append(anonymous.get(f"/v/{token}").status_code)
            anonymous.cookies.clear()
    assert statuses == [200] * 60 + [429]
    refused = httpx.get(f"{vault.url}/v/{token}")
    assert refused.status_code == 429
    assert ("this link was opened too many times from this address; try again later."
            in refused.text)
    assert len(api.get(f"/views/{token}").json()["sessions"]) == 50  # the latest 50 shown

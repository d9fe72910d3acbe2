"""Gated links' activity reports and status polls, attacked over HTTP: the holder of a forwarded
gated link (file link on the API and the hosted viewer, room link on the hosted viewer) can
neither add reading time to the owner's analytics nor learn that the link is live without a
session that passed every gate; they get exactly what a page request gets. The reader who passed
the gates reports and polls as before."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.gate_helpers import COOKIE, gated_link, pending
from tests.http_helpers import LINK_GONE, assert_json_error, upload_ok
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

PASSCODE = "quiet river"
REPORT = {"events": [{"page": 1, "seconds": 0.5}]}
FORGED = "A" * 43  # the shape of a session id, of no session


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Forecast.pdf")


def file_seconds(api: httpx.Client, file_id: str) -> float:
    seconds: float = api.get(f"/files/{file_id}/analytics").json()["pages"][0]["seconds"]
    return seconds


def accepted(post: Any) -> bool:
    """A report once enough time has passed since the first page (before, it is refused whole
    with 422): polled, never slept on."""
    response = post()
    assert response.status_code in (200, 422), response.text
    return bool(response.status_code == 200)


# --- file link, the API (Option B) ---------------------------------------------------------------

def api_report(api: httpx.Client, token: str, session: str | None = None,
               ip: str | None = None) -> httpx.Response:
    headers = {"x-viewer-session": session} if session else {}
    if ip:
        headers["x-viewer-ip"] = ip
    return api.post(f"/views/{token}/activity", json=REPORT, headers=headers)


def passed_api_session(api: httpx.Client, token: str, vault: VaultProcess) -> str:
    response = api.post(f"/views/{token}/sessions")
    assert response.status_code == 201, response.text
    session: str = response.json()["sessionId"]
    vault.secrets.append(session)
    passed = api.post(f"/views/{token}/sessions/{session}/passcode", json={"passcode": PASSCODE})
    assert passed.json()["pending"] == []
    renewed: str = passed.json()["sessionId"]  # the id passed with has ended
    vault.secrets.append(renewed)
    return renewed


def test_a_proxy_reports_time_on_a_gated_link_only_in_a_session_that_passed(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    session = passed_api_session(api, token, vault)
    page = api.get(f"/views/{token}/pages/1", headers={"x-viewer-session": session})
    assert page.status_code == 200
    wait_until(lambda: accepted(lambda: api_report(api, token, session)), what="a report")
    assert file_seconds(api, pdf_file["id"]) == 0.5
    # The link is open and time has passed: only the gates stand in the way now.
    assert_json_error(api_report(api, token), 403, pending("passcode"))
    assert_json_error(api_report(api, token, FORGED), 403, pending("passcode"))
    unpassed = api.post(f"/views/{token}/sessions").json()["sessionId"]
    vault.secrets.append(unpassed)
    assert_json_error(api_report(api, token, unpassed), 403, pending("passcode"))
    assert file_seconds(api, pdf_file["id"]) == 0.5
    # Time the refused reports would have used is still there for the reader who passed.
    wait_until(lambda: accepted(lambda: api_report(api, token, session)), what="a report")
    assert file_seconds(api, pdf_file["id"]) == 1.0


def test_a_proxy_report_is_refused_from_outside_the_links_addresses_as_its_pages(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, allowedIps=["203.0.113.0/24"])
    inside = "203.0.113.7"
    assert api.get(f"/views/{token}/pages/1", headers={"x-viewer-ip": inside}).status_code == 200
    wait_until(lambda: accepted(lambda: api_report(api, token, ip=inside)), what="a report")
    assert_json_error(api_report(api, token, ip="198.51.100.1"), 403,
                      "this link cannot be used from the viewer's IP address")
    assert_json_error(api_report(api, token), 403, "this link is limited to listed addresses: "
                      "the viewer's IP is needed (x-viewer-ip)")
    assert file_seconds(api, pdf_file["id"]) == 0.5


def test_another_accounts_key_gets_the_unknown_links_404_on_a_gated_link(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    session = passed_api_session(api, token, vault)
    with vault.client(vault.new_account("Other Co")[1]) as other:
        assert_json_error(api_report(other, token, session), 404, LINK_GONE)
        assert_json_error(other.get(f"/views/{token}/pages/1",
                                    headers={"x-viewer-session": session}), 404, LINK_GONE)


# --- file link, the hosted viewer ----------------------------------------------------------------

@contextmanager
def passed_browser(vault: VaultProcess, base: str, gate_page: str) -> Iterator[httpx.Client]:
    """A cookie-keeping browser that opened `gate_page` and passed its passcode screen."""
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        assert 'id="passcode-form"' in browser.get(gate_page).text
        vault.secrets.append(browser.cookies[COOKIE])
        passed = browser.post(f"{base}/session/passcode", json={"passcode": PASSCODE})
        assert passed.json() == {"pending": []}
        yield browser


def test_a_forwarded_hosted_link_reports_nothing_and_learns_nothing_without_the_gates(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    base = f"/v/{token}"
    with passed_browser(vault, base, base) as browser:
        assert browser.get(f"{base}/pages/1").status_code == 200
        wait_until(lambda: accepted(lambda: browser.post(f"{base}/activity", json=REPORT)),
                   what="a report")
        assert browser.get(f"{base}/status").json() == {"active": True}
    assert file_seconds(api, pdf_file["id"]) == 0.5
    with httpx.Client(base_url=vault.url, timeout=60) as forwarded:
        for cookies in ({}, {COOKIE: FORGED}):
            forwarded.cookies.clear()
            forwarded.cookies.update(cookies)
            assert_json_error(forwarded.post(f"{base}/activity", json=REPORT), 403,
                              pending("passcode"))
            assert_json_error(forwarded.get(f"{base}/status"), 403, pending("passcode"))
        # A browser that opened the gate screen holds a session, not yet passed.
        forwarded.cookies.clear()
        assert 'id="passcode-form"' in forwarded.get(base).text
        vault.secrets.append(forwarded.cookies[COOKIE])
        assert_json_error(forwarded.post(f"{base}/activity", json=REPORT), 403,
                          pending("passcode"))
        assert_json_error(forwarded.get(f"{base}/status"), 403, pending("passcode"))
    assert file_seconds(api, pdf_file["id"]) == 0.5
    assert api.delete(f"/views/{token}").status_code == 204  # revoked: 404 first, as pages
    assert_json_error(httpx.get(f"{vault.url}{base}/status"), 404, LINK_GONE)


# --- room link, the hosted room viewer -----------------------------------------------------------

@pytest.fixture
def room(api: httpx.Client) -> dict[str, Any]:
    """A room with one document in a folder and one outside it."""
    made = create_room(api, "Deal room")
    folder = add_folder(api, made["id"], "Legal")
    inside = upload_ok(api, docs.pdf(pages=2), name="Terms.pdf")
    outside = upload_ok(api, docs.pdf(pages=1), name="Cover.pdf")
    add_file(api, made["id"], inside["id"], folder=folder["id"])
    add_file(api, made["id"], outside["id"])
    return {**made, "folder": folder, "inside": inside, "outside": outside}


def room_seconds(api: httpx.Client, room_id: str) -> list[float]:
    analytics = api.get(f"/rooms/{room_id}/analytics").json()
    return [viewer["seconds"] for viewer in analytics["viewers"]]


def test_a_forwarded_room_link_reports_nothing_and_learns_nothing_without_the_gates(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    token: str = room_link(api, room["id"], policy={"passcode": PASSCODE},
                           folderIds=[room["folder"]["id"]])["token"]
    vault.secrets.append(token)
    base = f"/r/{token}"
    document = f"{base}/files/{room['inside']['id']}"
    with passed_browser(vault, base, base) as browser:
        assert browser.get(f"{document}/pages/1").status_code == 200
        wait_until(lambda: accepted(lambda: browser.post(f"{document}/activity", json=REPORT)),
                   what="a report")
        assert browser.get(f"{document}/status").json() == {"active": True}
        # Outside the link's scope: the unknown token's 404, whatever the session.
        outside = f"{base}/files/{room['outside']['id']}"
        assert_json_error(browser.get(f"{outside}/status"), 404, LINK_GONE)
    assert room_seconds(api, room["id"]) == [0.5]
    with httpx.Client(base_url=vault.url, timeout=60) as forwarded:
        for cookies in ({}, {COOKIE: FORGED}):
            forwarded.cookies.clear()
            forwarded.cookies.update(cookies)
            assert_json_error(forwarded.post(f"{document}/activity", json=REPORT), 403,
                              pending("passcode"))
            assert_json_error(forwarded.get(f"{document}/status"), 403, pending("passcode"))
            assert_json_error(forwarded.get(f"{outside}/status"), 404, LINK_GONE)
    assert room_seconds(api, room["id"]) == [0.5]

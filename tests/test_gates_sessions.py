"""Viewer sessions over the API: gates are passed only by the server's own checks, in a
session of one link, and every way around them is refused."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.gate_helpers import SESSION_GONE, gated_link, pending
from tests.http_helpers import LINK_GONE, assert_json_error, upload_ok
from tests.vault_process import VaultProcess

PASSCODE = "open sesame"


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Deal.pdf")


@pytest.fixture
def agreement(api: httpx.Client) -> dict[str, Any]:
    response = api.post("/agreements", json={"name": "Mutual NDA", "text": "Keep it secret."})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def open_session(api: httpx.Client, token: str, vault: VaultProcess,
                 **headers: str) -> dict[str, Any]:
    response = api.post(f"/views/{token}/sessions", headers=headers)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    vault.secrets.append(body["sessionId"])
    return body


def give_passcode(api: httpx.Client, token: str, sid: str, passcode: str = PASSCODE) -> str:
    """The passcode given in session `sid`: the session's new id (the old one has ended)."""
    response = api.post(f"/views/{token}/sessions/{sid}/passcode", json={"passcode": passcode})
    assert response.status_code == 200, response.text
    renewed: str = response.json()["sessionId"]
    assert renewed != sid
    return renewed


def page(api: httpx.Client, token: str, session: str | None = None) -> httpx.Response:
    headers = {"x-viewer-session": session} if session else {}
    return api.get(f"/views/{token}/pages/1", headers=headers)


def test_a_passcode_link_serves_pages_only_in_a_session_that_gave_it(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    assert_json_error(page(api, token), 403, pending("passcode"))
    session = open_session(api, token, vault)
    assert session["pending"] == ["passcode"]
    assert_json_error(page(api, token, session["sessionId"]), 403, pending("passcode"))
    sid = session["sessionId"]
    assert_json_error(api.post(f"/views/{token}/sessions/{sid}/passcode",
                               json={"passcode": "guess"}), 403, "passcode is not correct")
    response = api.post(f"/views/{token}/sessions/{sid}/passcode", json={"passcode": PASSCODE})
    assert response.status_code == 200 and response.json()["pending"] == []
    assert_json_error(page(api, token, sid), 403, pending("passcode"))  # the old id has ended
    sid = response.json()["sessionId"]
    vault.secrets.append(sid)
    served = page(api, token, sid)
    assert served.status_code == 200 and served.headers["content-type"] == "image/jpeg"
    steps = [entry["detail"]["step"] for entry in
             api.get(f"/files/{pdf_file['id']}/access-log?action=verify").json()]
    assert steps == ["passcode", "passcode-wrong"]
    shown = api.get(f"/views/{token}").json()["sessions"]
    assert [list(s["passed"]) for s in shown] == [["passcode"]]


def test_guessing_the_passcode_stops_after_five_tries_per_session(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    sid = open_session(api, token, vault)["sessionId"]
    url = f"/views/{token}/sessions/{sid}/passcode"
    for guess in range(5):
        assert_json_error(api.post(url, json={"passcode": f"guess {guess}"}), 403,
                          "passcode is not correct")
    assert_json_error(api.post(url, json={"passcode": PASSCODE}), 429,
                      "too many passcode tries in this session: open a new session")
    assert_json_error(page(api, token, sid), 403, pending("passcode"))


def test_a_session_replayed_on_another_link_is_unknown_there(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    first = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    second = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    sid = give_passcode(api, first, open_session(api, first, vault)["sessionId"])
    assert page(api, first, sid).status_code == 200
    assert_json_error(page(api, second, sid), 403, pending("passcode"))
    assert_json_error(api.post(f"/views/{second}/sessions/{sid}/passcode",
                               json={"passcode": PASSCODE}), 404, SESSION_GONE)


def test_a_session_from_before_a_revoke_serves_nothing(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE)
    sid = give_passcode(api, token, open_session(api, token, vault)["sessionId"])
    assert page(api, token, sid).status_code == 200
    assert api.delete(f"/views/{token}").status_code == 204
    assert_json_error(page(api, token, sid), 404, LINK_GONE)
    assert_json_error(api.post(f"/views/{token}/sessions"), 404, LINK_GONE)


def test_max_opens_counts_sessions_that_passed_then_the_link_is_spent(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE, maxOpens=1)
    sid = give_passcode(api, token, open_session(api, token, vault)["sessionId"])
    assert page(api, token, sid).status_code == 200
    # Opening a session spends nothing; passing its last gate is the open beyond maxOpens.
    other = open_session(api, token, vault)["sessionId"]
    assert_json_error(api.post(f"/views/{token}/sessions/{other}/passcode",
                               json={"passcode": PASSCODE}), 404, LINK_GONE)
    assert_json_error(page(api, token, sid), 404, LINK_GONE)


def test_an_agreement_is_accepted_only_by_the_post_with_a_typed_name(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess,
        agreement: dict[str, Any]) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode=PASSCODE, agreementId=agreement["id"])
    sid = open_session(api, token, vault)["sessionId"]
    accept = f"/views/{token}/sessions/{sid}/agreement"
    # A client claiming acceptance on the page request, or before the passcode, gets nothing.
    claimed = api.get(f"/views/{token}/pages/1",
                      headers={"x-viewer-session": sid, "x-agreement-accepted": "true"})
    assert_json_error(claimed, 403, pending("passcode", "agreement"))
    assert_json_error(api.post(accept, json={"name": "Ann Reader"}), 403, pending("passcode"))
    sid = give_passcode(api, token, sid)
    accept = f"/views/{token}/sessions/{sid}/agreement"
    assert_json_error(page(api, token, sid), 403, pending("agreement"))
    assert_json_error(api.post(accept, json={"name": " "}), 400,
                      "name must be the reader's full name, typed (2 to 100 characters)")
    response = api.post(accept, json={"name": "Ann  Reader"},
                        headers={"x-viewer-ip": "192.0.2.4", "x-viewer-user-agent": "Tests/1"})
    assert response.json()["pending"] == []
    assert page(api, token, response.json()["sessionId"]).status_code == 200
    entries = api.get(f"/files/{pdf_file['id']}/access-log?action=agreement").json()
    assert len(entries) == 1
    detail = entries[0]["detail"]
    assert entries[0]["ip"] == "192.0.2.4"
    assert {k: detail[k] for k in ("agreementId", "version", "sha256", "name", "userAgent")} == {
        "agreementId": agreement["id"], "version": 1, "sha256": agreement["sha256"],
        "name": "Ann Reader", "userAgent": "Tests/1"}


def test_agreements_are_versioned_and_a_link_keeps_its_version(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess,
        agreement: dict[str, Any]) -> None:
    token = gated_link(api, pdf_file["id"], vault, agreementId=agreement["id"])
    again = api.post("/agreements", json={"name": "Mutual NDA", "text": "Keep it very secret."})
    assert again.status_code == 201
    second = again.json()
    assert (second["id"], second["version"]) == (agreement["id"], 2)
    assert second["sha256"] != agreement["sha256"]
    latest = api.get(f"/agreements/{agreement['id']}").json()
    assert (latest["version"], latest["text"]) == (2, "Keep it very secret.")
    assert [a["version"] for a in api.get("/agreements").json()] == [2]
    policy = api.get(f"/views/{token}").json()["policy"]
    assert (policy["agreementVersion"], policy["agreementSha256"]) == (1, agreement["sha256"])


def test_agreements_need_pro_or_business(vault: VaultProcess) -> None:
    _, key = vault.new_account(plan="free")
    with vault.client(key) as free:
        file = upload_ok(free, docs.pdf(pages=1))
        message = "agreements need plan Pro or Business; this account is on plan Free"
        assert_json_error(free.post("/agreements", json={"name": "N", "text": "T"}), 402,
                          message)
        response = free.post("/views", json={"fileId": file["id"], "viewerEmail": "a@b.example",
                                             "policy": {"agreementId": file["id"]}})
        assert_json_error(response, 402, message)


@pytest.mark.parametrize(("body", "message"), [
    ({"text": "T"}, "name is required: a string of at most 200 characters"),
    ({"name": "N"}, "text is required: a string of at most 12000 characters"),
    ({"name": "N", "text": "x" * 12_001},
     "text is required: a string of at most 12000 characters"),
])
def test_an_invalid_agreement_is_a_400_naming_the_field(api: httpx.Client, body: dict[str, Any],
                                                       message: str) -> None:
    assert_json_error(api.post("/agreements", json=body), 400, message)


def test_an_unknown_agreement_is_404(api: httpx.Client) -> None:
    assert_json_error(api.get("/agreements/7d0e3a4c-58a4-4f4c-9c43-1b8f0e8d1c11"), 404,
                      "agreement not found")

"""Link policies on `POST /v1/views`: every invalid value is a 400 naming the field, the policy
is shown back without the passcode, and a link without one answers exactly as the spec shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.gate_helpers import gated_link
from tests.http_helpers import LINK_GONE, assert_json_error, create_link, upload_ok
from tests.vault_process import VaultProcess


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Terms.pdf")


NETWORKS = "policy.allowedIps must be a list of 1 to 50 addresses or CIDR ranges"
BAD_NETWORK = "policy.allowedIps must hold IP addresses or CIDR ranges such as 203.0.113.0/24"
NOT_BEFORE = "policy.notBefore must be an ISO 8601 time with a zone, before the link expires"
MAX_OPENS = "policy.maxOpens must be a whole number from 1 to 1000000"
PASSCODE = "policy.passcode must be a string of 4 to 128 characters"


@pytest.mark.parametrize(("policy", "message"), [
    ("yes", "policy must be an object"),
    ({"sso": True}, "policy.sso is not a known gate (gates: verifyEmail, passcode, agreementId, "
                    "allowedIps, notBefore, maxOpens)"),
    ({"verifyEmail": "yes"}, "policy.verifyEmail must be true or false"),
    ({"verifyEmail": True}, "policy.verifyEmail needs mail: the server's smtp.host is not set"),
    ({"passcode": "abc"}, PASSCODE),
    ({"passcode": 1234}, PASSCODE),
    ({"allowedIps": []}, NETWORKS),
    ({"allowedIps": "10.0.0.0/8"}, NETWORKS),
    ({"allowedIps": ["10.0.0.300"]}, BAD_NETWORK),
    ({"allowedIps": [7]}, BAD_NETWORK),
    ({"notBefore": "tomorrow"}, NOT_BEFORE),
    ({"notBefore": "2030-01-01T00:00:00"}, NOT_BEFORE),
    ({"notBefore": "2999-01-01T00:00:00Z"}, NOT_BEFORE),
    ({"maxOpens": 0}, MAX_OPENS),
    ({"maxOpens": 1.5}, MAX_OPENS),
    ({"maxOpens": True}, MAX_OPENS),
    ({"agreementId": "not-an-id"}, "policy.agreementId names no agreement of this account"),
])
def test_an_invalid_policy_is_a_400_naming_the_field(api: httpx.Client, pdf_file: dict[str, Any],
                                                    policy: Any, message: str) -> None:
    response = api.post("/views", json={"fileId": pdf_file["id"],
                                        "viewerEmail": "ann@example.com", "policy": policy})
    assert_json_error(response, 400, message)


def test_a_link_without_policy_shows_exactly_the_spec_fields(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = create_link(api, pdf_file["id"])["token"]
    vault.secrets.append(token)
    body = api.get(f"/views/{token}").json()
    assert set(body) == {"fileName", "pageCount", "viewerName", "viewerEmail", "expiresAt",
                         "brand"}


def test_the_policy_is_shown_back_without_the_passcode(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, passcode="correct horse", maxOpens=3,
                       allowedIps=["127.0.0.1", "2001:db8::/32"],
                       notBefore="2020-01-01T00:00:00+01:00")
    response = api.get(f"/views/{token}", headers={"x-viewer-ip": "127.0.0.1"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["policy"] == {"passcode": True, "maxOpens": 3,
                              "allowedIps": ["127.0.0.1/32", "2001:db8::/32"],
                              "notBefore": "2019-12-31T23:00:00.000Z"}
    assert body["sessions"] == []
    assert "correct horse" not in response.text


def test_a_link_before_not_before_is_refused_naming_the_time(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    start = (datetime.now(UTC) + timedelta(minutes=30)).replace(microsecond=0)
    token = gated_link(api, pdf_file["id"], vault, notBefore=start.isoformat())
    expected = f"this link cannot be used before {start:%Y-%m-%dT%H:%M:%S}.000Z"
    assert_json_error(api.get(f"/views/{token}"), 403, expected)
    assert_json_error(api.get(f"/views/{token}/pages/1"), 403, expected)
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/pages/1"), 403, expected)


def test_a_forwarded_link_opened_from_another_address_is_refused(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated_link(api, pdf_file["id"], vault, allowedIps=["203.0.113.0/24"])
    inside = {"x-viewer-ip": "203.0.113.9"}
    assert api.get(f"/views/{token}", headers=inside).status_code == 200
    assert api.get(f"/views/{token}/pages/1", headers=inside).status_code == 200
    refused = "this link cannot be used from the viewer's IP address"
    outside = {"x-viewer-ip": "198.51.100.7"}
    assert_json_error(api.get(f"/views/{token}/pages/1", headers=outside), 403, refused)
    assert_json_error(api.get(f"/views/{token}", headers=outside), 403, refused)
    assert_json_error(api.get(f"/views/{token}/pages/1"), 403,
                      "this link is limited to listed addresses: the viewer's IP is needed "
                      "(x-viewer-ip)")
    # The hosted viewer sees the loopback address, which is not in the list.
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/pages/1"), 403, refused)


def test_a_link_without_session_gates_is_spent_after_max_opens(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    """Without session gates, each session is one open: a proxy's, or a browser's cookie."""
    token = gated_link(api, pdf_file["id"], vault, maxOpens=2)
    assert api.get(f"/views/{token}").status_code == 200  # the owner's details: not an open
    first = api.post(f"/views/{token}/sessions")
    assert first.status_code == 201 and first.json()["pending"] == []
    vault.secrets.append(first.json()["sessionId"])
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        assert browser.get(f"/v/{token}").status_code == 200
        vault.secrets.append(browser.cookies["vaultd_session"])
        assert browser.get(f"/v/{token}").status_code == 200  # its cookie: the same open
        assert browser.get(f"/v/{token}/pages/1").status_code == 200
    headers = {"x-viewer-session": first.json()["sessionId"]}
    assert api.get(f"/views/{token}/pages/1", headers=headers).status_code == 200
    assert_json_error(api.post(f"/views/{token}/sessions"), 404, LINK_GONE)
    assert_json_error(api.get(f"/views/{token}/pages/1", headers=headers), 404, LINK_GONE)
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/status"), 404, LINK_GONE)

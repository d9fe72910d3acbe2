"""Authentication and the JSON error contract, over HTTP against a real vaultd."""

from __future__ import annotations

import httpx
import pytest

from tests.http_helpers import INVALID_KEY, MISSING_KEY, NO_ENDPOINT, assert_json_error
from tests.vault_process import VaultProcess

PROTECTED = [
    ("GET", "/account"),
    ("GET", "/files"),
    ("POST", "/files"),
    ("GET", "/files/5f0c1b1e-8d4e-4c8e-9a55-2f1f6f2b9a10"),
    ("DELETE", "/files/5f0c1b1e-8d4e-4c8e-9a55-2f1f6f2b9a10"),
    ("GET", "/files/5f0c1b1e-8d4e-4c8e-9a55-2f1f6f2b9a10/download"),
    ("GET", "/files/5f0c1b1e-8d4e-4c8e-9a55-2f1f6f2b9a10/access-log"),
    ("POST", "/files/5f0c1b1e-8d4e-4c8e-9a55-2f1f6f2b9a10/revoke-views"),
    ("POST", "/views"),
    ("GET", "/views/" + "A" * 43),
    ("GET", "/views/" + "A" * 43 + "/pages/1"),
    ("DELETE", "/views/" + "A" * 43),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_every_endpoint_refuses_a_request_without_a_key(
    anon: httpx.Client, method: str, path: str
) -> None:
    response = anon.request(method, path, content=b"%PDF-1.4")
    assert_json_error(response, 401, MISSING_KEY)
    assert response.headers["WWW-Authenticate"] == "Bearer"  # RFC 6750's challenge


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Bearer sd_live_short", INVALID_KEY),
        ("Bearer sd_test_" + "a" * 43, INVALID_KEY),
        ("Basic dXNlcjpwYXNz", MISSING_KEY),
        ("Bearer " + "sd_live_" + "b" * 43, INVALID_KEY),  # well formed, unknown
        ("sd_live_" + "c" * 43, MISSING_KEY),  # no scheme
    ],
)
def test_malformed_and_unknown_keys_get_401(vault: VaultProcess, header: str,
                                            message: str) -> None:
    with vault.client() as client:
        response = client.get("/account", headers={"Authorization": header})
        assert_json_error(response, 401, message)
        assert response.headers["WWW-Authenticate"] == "Bearer"


def test_a_revoked_key_stops_working_at_once(vault: VaultProcess) -> None:
    account_id, key = vault.new_account()
    with vault.client(key) as client:
        assert client.get("/account").status_code == 200
        keys = vault.admin_json("keys", "list", account_id)
        vault.admin("keys", "revoke", keys[0]["id"])
        assert_json_error(client.get("/account"), 401, INVALID_KEY)
        assert_json_error(client.get("/files"), 401, INVALID_KEY)


def test_health_needs_no_key(anon: httpx.Client, vault: VaultProcess) -> None:
    response = httpx.get(f"{vault.url}/healthz")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"status", "renderSandbox"} and body["status"] == "ok"
    assert body["renderSandbox"]["mode"] == "auto"


def test_unknown_routes_answer_json_404(api: httpx.Client, vault: VaultProcess) -> None:
    assert_json_error(api.get("/nothing-here"), 404, NO_ENDPOINT)
    assert_json_error(httpx.post(f"{vault.url}/admin.php"), 404, NO_ENDPOINT)


def test_wrong_methods_answer_json_405(api: httpx.Client) -> None:
    assert_json_error(api.put("/account"), 405, "method not allowed")
    response = api.patch("/files")  # two handlers share the path: both methods are allowed
    assert_json_error(response, 405, "method not allowed")
    assert response.headers["Allow"] == "GET, POST"


def test_errors_never_leak_an_html_page_or_traceback(api: httpx.Client) -> None:
    response = api.post(
        "/views", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert_json_error(response, 400, "request body is not valid JSON")

"""Isolation between accounts and the handling of secrets.

Account B tries every endpoint with account A's file ids, link tokens and keys: nothing but
404/401, no byte of A's data, no side effect on A. The hosted viewer serves only with a live
token. Tokens and keys never reach the server log (access log, error log, Tornado's own
messages) and are stored only as SHA-256, looked up by hash, drawn from the OS CSPRNG.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import (
    FILE_NOT_FOUND,
    INVALID_KEY,
    LINK_GONE,
    MISSING_KEY,
    assert_json_error,
    create_link,
    upload_ok,
)
from tests.inprocess import inprocess_vault
from tests.isolation_tenants import (
    ONE_SHOT,
    Tenant,
    a_s_endpoints,
    assert_no_data_of,
    bad_keys,
    every_request,
    expected_refusal,
    make_tenant,
    not_tokens,
    snapshot,
)
from tests.vault_process import VaultProcess
from vaultd import secrets as vault_secrets
from vaultd.services.accounts import api_keys

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    """This module's own vaultd, so its log holds only what these tests did."""
    with inprocess_vault(tmp_path_factory.mktemp("isolation") / "data") as server:
        yield server


@pytest.fixture(scope="module")
def a(vault: VaultProcess) -> Iterator[Tenant]:
    tenant = make_tenant(vault, "Alpha Holdings", "pro", "a")
    yield tenant
    tenant.client.close()


@pytest.fixture(scope="module")
def b(vault: VaultProcess) -> Iterator[Tenant]:
    tenant = make_tenant(vault, "Beta Rivals", "free", "b")
    yield tenant
    tenant.client.close()


@pytest.fixture(scope="module")
def a_revoked_key(vault: VaultProcess, a: Tenant) -> str:
    """A second key of A's, revoked."""

    async def make(db: Any) -> str:
        info, key = await api_keys.create_key(db, a.account_id)
        await api_keys.revoke_key_once(db, info.id)
        return key

    key = vault.run_service(make)
    vault.secrets.append(key)
    return key


@pytest.fixture(scope="module")
def web(vault: VaultProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=vault.url, timeout=60) as client:
        yield client


# --- another account's ids and tokens -----------------------------------------------------------


def test_b_gets_404_and_none_of_a_s_data_from_every_endpoint(a: Tenant, b: Tenant) -> None:
    for method, path, options in every_request(a):
        response = b.client.request(method, path, **options)
        # Another account's file is unknown; its link (or its file, to make one) too.
        message = LINK_GONE if path.startswith("/views/") else FILE_NOT_FOUND
        assert_json_error(response, 404, message)
        assert_no_data_of(a, response)


def test_b_revoking_the_views_of_a_s_files_revokes_nothing(a: Tenant, b: Tenant) -> None:
    for file_id in a.file_ids:
        response = b.client.post(f"/files/{file_id}/revoke-views")
        assert response.status_code == 200 and response.json() == {"revoked": 0}
    for token in a.tokens.values():
        assert a.client.get(f"/views/{token}").status_code == 200


def test_b_sees_only_its_own_files_and_account(a: Tenant, b: Tenant) -> None:
    listing = b.client.get("/files", params={"perPage": 100})
    assert {f["id"] for f in listing.json()["files"]} == set(b.file_ids)
    assert listing.json()["total"] == 2
    assert_no_data_of(a, listing)
    account = b.client.get("/account").json()
    assert (account["id"], account["name"]) == (b.account_id, "Beta Rivals")
    assert account["usage"]["documents"] == 2


def test_a_s_resources_are_unchanged_by_everything_b_tried(a: Tenant, b: Tenant,
                                                           web: httpx.Client) -> None:
    before = snapshot(a, web)
    for method, path, options in every_request(a):
        b.client.request(method, path, **options)
    for file_id in a.file_ids:
        b.client.post(f"/files/{file_id}/revoke-views")
    after = snapshot(a, web)
    assert after == before  # no deletion, no revocation, no access-log entry caused by B


# --- keys ---------------------------------------------------------------------------------------


def test_a_s_revoked_key_gets_401_on_every_endpoint(vault: VaultProcess, a: Tenant,
                                                    a_revoked_key: str) -> None:
    with vault.client(a_revoked_key) as revoked:
        for method, path in a_s_endpoints(a):
            body = b"%PDF-1.4" if path == "/files" else None
            response = revoked.request(method, path, content=body, headers=ONE_SHOT)
            assert_json_error(response, 401, INVALID_KEY)
            assert_no_data_of(a, response)
    assert a.client.get(f"/files/{a.files['delivery']['id']}").status_code == 200


def test_malformed_and_unknown_keys_get_401_on_every_endpoint(a: Tenant, web: httpx.Client) -> None:
    for header in bad_keys(a):
        for method, path in a_s_endpoints(a):
            response = web.request(method, f"/v1{path}",
                                   headers={"Authorization": header, **ONE_SHOT},
                                   content=b"%PDF-1.4" if path == "/files" else None)
            assert_json_error(response, 401, expected_refusal(header))
            assert_no_data_of(a, response)


def test_a_refused_request_leaves_the_keep_alive_connection_usable(
    vault: VaultProcess, a: Tenant, a_revoked_key: str
) -> None:
    # Every 401 must arrive as JSON, and the next request on the same connection must too: a
    # server that closes a kept-alive connection without `Connection: close` makes the client's
    # next request fail with a reset instead of an answer.
    failures: list[str] = []
    with httpx.Client(base_url=f"{vault.url}/v1", timeout=30) as client:
        for round_ in range(40):
            for path, key, status in (("/files", a_revoked_key, 401), ("/account", a.key, 200),
                                      ("/files", "sd_live_" + "x" * 43, 401),
                                      ("/files", a.key, 200)):
                try:
                    response = client.get(path, headers={"Authorization": f"Bearer {key}"})
                except httpx.TransportError as error:
                    failures.append(f"round {round_} GET {path}: {type(error).__name__}")
                    continue
                assert response.status_code == status, response.text
    assert not failures, f"{len(failures)} requests got no answer, e.g. {failures[:3]}"


def test_a_key_in_the_query_string_is_not_a_key(a: Tenant, web: httpx.Client) -> None:
    for name in ("api_key", "key", "token", "access_token"):
        assert_json_error(web.get("/v1/account", params={name: a.key}), 401, MISSING_KEY)


# --- the hosted viewer --------------------------------------------------------------------------


def test_the_hosted_viewer_serves_a_live_token_without_any_key(a: Tenant,
                                                               web: httpx.Client) -> None:
    token = a.tokens["source"]
    assert web.get(f"/v/{token}").status_code == 200
    assert web.get(f"/v/{token}/status").json() == {"active": True}
    page = web.get(f"/v/{token}/pages/1")
    assert page.status_code == 200 and page.content[:3] == b"\xff\xd8\xff"


def test_the_hosted_viewer_serves_nothing_without_a_live_token(vault: VaultProcess, a: Tenant,
                                                               b: Tenant,
                                                               web: httpx.Client) -> None:
    for value in not_tokens(a):
        page = web.get(f"/v/{value}", headers={"Authorization": f"Bearer {b.key}"})
        assert page.status_code == 404 and "This link is no longer available." in page.text
        assert_no_data_of(a, page)
        for suffix in ("/status", "/pages/1"):
            response = web.get(f"/v/{value}{suffix}")
            assert_json_error(response, 404, LINK_GONE)
            assert_no_data_of(a, response)


def test_a_revoked_or_deleted_link_stops_the_hosted_viewer(vault: VaultProcess, a: Tenant,
                                                           web: httpx.Client) -> None:
    file = upload_ok(a.client, docs.pdf(1), name="short lived.pdf")
    revoked, orphaned = (create_link(a.client, file["id"])["token"] for _ in range(2))
    vault.secrets += [revoked, orphaned]
    assert a.client.delete(f"/views/{revoked}").status_code == 204
    assert a.client.delete(f"/files/{file['id']}").status_code == 204
    for token in (revoked, orphaned):
        assert web.get(f"/v/{token}").status_code == 404
        for suffix in ("/status", "/pages/1"):
            assert_json_error(web.get(f"/v/{token}{suffix}"), 404, LINK_GONE)


# --- the server log -----------------------------------------------------------------------------


def test_tokens_in_paths_reach_the_log_only_as_placeholders(vault: VaultProcess, a: Tenant,
                                                            a_revoked_key: str,
                                                            web: httpx.Client) -> None:
    token, unknown = a.tokens["delivery"], "Z" * 43
    vault.secrets.append(unknown)
    auth = {"Authorization": f"Bearer {a.key}"}
    for value in (token, unknown):
        web.get(f"/v1/views/{value}", headers=auth)
        web.get(f"/v1/views/{value}/pages/1", headers=auth)
        web.get(f"/v1/views/{value}/pages/1", headers={"Authorization": f"Bearer {a_revoked_key}"})
        web.get(f"/v/{value}")
        web.get(f"/v/{value}/pages/1")
        web.get(f"/v/{value}/status")
        web.get(f"/v/{value}/nothing-here")
        web.get("/v1/files", params={"token": value}, headers=auth)
    log = vault.log_text()
    assert token not in log and unknown not in log
    for line in ("GET /v1/views/<token> ", "GET /v1/views/<token>/pages/1 ", "GET /v/<token> ",
                 "GET /v/<token>/pages/1 ", "GET /v/<token>/status ", "401 GET /v1/views/<token>"):
        assert line in log, f"no access-log line with {line!r}"


def test_authorization_headers_never_reach_the_log(vault: VaultProcess, a: Tenant,
                                                   a_revoked_key: str,
                                                   web: httpx.Client) -> None:
    unknown = "sd_live_" + "Q" * 43
    vault.secrets.append(unknown)
    for header in (f"Bearer {a.key}", f"Bearer {a_revoked_key}", f"Bearer {unknown}",
                   f"Basic {a.key}", f"Bearer {a.key}x", a.key):
        web.get("/v1/account", headers={"Authorization": header})
        web.get("/v1/nothing-here", headers={"Authorization": header})
        web.put("/v1/account", headers={"Authorization": header})
        web.post("/v1/views", headers={"Authorization": header}, content=b"{broken")
    log = vault.log_text()
    for secret in (a.key, a_revoked_key, unknown):
        assert secret not in log
    assert "Authorization" not in log and "Bearer" not in log


def raw_request(vault: VaultProcess, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", vault.port), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(65536)


def test_a_malformed_authorization_header_is_not_echoed_into_the_log(
    vault: VaultProcess, a: Tenant
) -> None:
    # Tornado refuses a header value with a control character and logs why, value included.
    for junk in (b"\x01", b"\x7f", b"\x00"):
        answer = raw_request(vault, b"GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                             + a.key.encode() + junk + b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400")
    assert a.key not in vault.log_text()


def test_an_unexpected_error_on_a_token_path_logs_no_token(vault: VaultProcess, a: Tenant,
                                                           web: httpx.Client) -> None:
    # A damaged file record (an operator problem) makes the handlers fail unexpectedly: the 500
    # is answered as JSON, and Tornado's error log must not print the request's URI.
    file = upload_ok(a.client, docs.pdf(1), name="damaged record.pdf")
    token = create_link(a.client, file["id"])["token"]
    vault.secrets.append(token)

    async def damage(db: Any) -> None:
        await db.files.update_one({"_id": file["id"]}, {"$set": {"pageCount": "many"}})

    vault.run_service(damage)
    for response in (a.client.get(f"/views/{token}"), a.client.get(f"/views/{token}/pages/1"),
                     web.get(f"/v/{token}"), web.get(f"/v/{token}/pages/1")):
        assert_json_error(response, 500, "internal server error")
        assert "Traceback" not in response.text
    assert token not in vault.log_text()


# --- storage of secrets -------------------------------------------------------------------------


def test_the_database_holds_only_hashes_of_keys_and_tokens(vault: VaultProcess, a: Tenant,
                                                           b: Tenant, a_revoked_key: str) -> None:
    secrets = [a.key, b.key, a_revoked_key, *a.tokens.values(), *b.tokens.values()]

    async def dump(db: Any) -> dict[str, list[dict[str, Any]]]:
        names = await db.database.list_collection_names()
        return {name: [doc async for doc in db.database[name].find({})] for name in names}

    collections = vault.run_service(dump)
    text = repr(collections)
    assert not [s[:12] for s in secrets if s in text], "a key or token is stored in clear"
    key_hashes = {doc["hash"] for doc in collections["api_keys"]}
    assert {vault_secrets.digest(k) for k in (a.key, b.key, a_revoked_key)} <= key_hashes
    link_hashes = {doc["hash"] for doc in collections["links"]}
    tokens = [*a.tokens.values(), *b.tokens.values()]
    assert {hashlib.sha256(t.encode()).hexdigest() for t in tokens} <= link_hashes


def test_the_server_log_holds_none_of_the_keys_and_tokens_created_here(
    vault: VaultProcess, a: Tenant, b: Tenant
) -> None:
    log = vault.log_text()
    leaked = [s[:12] + "…" for s in vault.secrets if s in log]
    assert not leaked, f"secrets found in the server log: {leaked}"

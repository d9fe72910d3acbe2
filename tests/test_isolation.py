"""Isolation between accounts and the handling of secrets.

Account B tries every endpoint with account A's file ids, link tokens and keys: nothing but
404/401, no byte of A's data, no side effect on A. The hosted viewer serves only with a live
token. Tokens and keys never reach the server log (access log, error log, Tornado's own
messages) and are stored only as SHA-256, looked up by hash, drawn from the OS CSPRNG.
"""

from __future__ import annotations

import hashlib
import random
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from tests.vault_process import VaultProcess, running_vault
from vaultd import secrets as vault_secrets
from vaultd.errors import NotFound
from vaultd.services import api_keys
from vaultd.services.link_records import LinkRecords

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@dataclass
class Tenant:
    account_id: str
    key: str
    client: httpx.Client
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    marks: list[str] = field(default_factory=list)  # strings that must never reach the other

    @property
    def file_ids(self) -> list[str]:
        return [file["id"] for file in self.files.values()]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    """This module's own vaultd, so its log holds only what these tests did."""
    with running_vault(tmp_path_factory.mktemp("isolation") / "data") as server:
        yield server


def make_tenant(vault: VaultProcess, name: str, plan: str, initial: str) -> Tenant:
    account_id, key = vault.new_account(name, plan)
    tenant = Tenant(account_id, key, vault.client(key))
    source = upload_ok(tenant.client, docs.pdf(2), name=f"{name} board minutes.pdf")
    delivery = upload_ok(tenant.client, docs.png(), name=f"{name} deliverable.png",
                         kind="delivery")
    tenant.files = {"source": source, "delivery": delivery}
    viewer = f"{initial}-viewer@{initial}.example"
    for label, file in tenant.files.items():
        token = create_link(tenant.client, file["id"], viewer, viewerName=f"{name} Viewer")["token"]
        tenant.tokens[label] = token
        vault.secrets.append(token)
    tenant.marks = [name, viewer, *tenant.file_ids, *tenant.tokens.values(), key]
    return tenant


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
        await api_keys.revoke_key(db, info.id)
        return key

    key = vault.run_service(make)
    vault.secrets.append(key)
    return key


@pytest.fixture(scope="module")
def web(vault: VaultProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=vault.url, timeout=60) as client:
        yield client


def assert_no_data_of(tenant: Tenant, response: httpx.Response) -> None:
    leaked = [mark for mark in tenant.marks if mark.lower() in response.text.lower()]
    assert not leaked, f"{response.request.method} {response.request.url.path}: {leaked}"


def every_request(tenant: Tenant) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, options) for every endpoint of the spec, aimed at `tenant`'s resources."""
    requests: list[tuple[str, str, dict[str, Any]]] = []
    for file_id in tenant.file_ids:
        for variant in (file_id, file_id.upper()):
            requests += [("GET", f"/files/{variant}", {}),
                         ("GET", f"/files/{variant}/download", {}),
                         ("GET", f"/files/{variant}/access-log", {}),
                         ("DELETE", f"/files/{variant}", {}),
                         ("POST", "/views", {"json": {"fileId": variant,
                                                      "viewerEmail": "thief@b.example"}})]
    for token in tenant.tokens.values():
        requests += [("GET", f"/views/{token}", {"headers": {"x-viewer-ip": "203.0.113.66"}}),
                     ("GET", f"/views/{token}/pages/1", {}),
                     ("DELETE", f"/views/{token}", {})]
    return requests


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


def snapshot(tenant: Tenant, web: httpx.Client) -> dict[str, Any]:
    """A's view of its own resources, read without writing any access-log entry."""
    state: dict[str, Any] = {"files": tenant.client.get("/files").json(),
                             "account": tenant.client.get("/account").json()}
    for file_id in tenant.file_ids:
        state[file_id] = tenant.client.get(f"/files/{file_id}").json()
        state[f"{file_id}/log"] = tenant.client.get(f"/files/{file_id}/access-log").json()
    for token in tenant.tokens.values():
        state[token] = web.get(f"/v/{token}/status").json()
    return state


# --- keys ---------------------------------------------------------------------------------------


def a_s_endpoints(a: Tenant) -> list[tuple[str, str]]:
    file_id, token = a.files["delivery"]["id"], a.tokens["delivery"]
    return [("GET", "/account"), ("GET", "/files"), ("POST", "/files"),
            ("GET", f"/files/{file_id}"), ("GET", f"/files/{file_id}/download"),
            ("GET", f"/files/{file_id}/access-log"), ("DELETE", f"/files/{file_id}"),
            ("POST", f"/files/{file_id}/revoke-views"), ("POST", "/views"),
            ("GET", f"/views/{token}"), ("GET", f"/views/{token}/pages/1"),
            ("DELETE", f"/views/{token}")]


# Each sweep request on its own connection, so a connection-level failure (see the keep-alive
# test below) is reported there, against the request that caused it.
ONE_SHOT = {"Connection": "close"}


def test_a_s_revoked_key_gets_401_on_every_endpoint(vault: VaultProcess, a: Tenant,
                                                    a_revoked_key: str) -> None:
    with vault.client(a_revoked_key) as revoked:
        for method, path in a_s_endpoints(a):
            body = b"%PDF-1.4" if path == "/files" else None
            response = revoked.request(method, path, content=body, headers=ONE_SHOT)
            assert_json_error(response, 401, INVALID_KEY)
            assert_no_data_of(a, response)
    assert a.client.get(f"/files/{a.files['delivery']['id']}").status_code == 200


def bad_keys(a: Tenant) -> list[str]:
    key, token = a.key, a.tokens["source"]
    flipped = key[:-1] + ("A" if key[-1] != "A" else "B")
    return [
        f"Bearer {token}",  # a link token is not a key
        f"Bearer sd_live_{token}",  # nor with the prefix
        f"Bearer {hashlib.sha256(key.encode()).hexdigest()}",  # nor the stored hash
        f"Bearer {vault_secrets.digest(key)}",
        f"Bearer {flipped}", f"Bearer {key[:-1]}", f"Bearer {key}A", f"Bearer {key.upper()}",
        f"Bearer {key.replace('sd_live_', 'sd_test_')}", f"Basic {key}", f"Token {key}",
        key, "Bearer", f"Bearer {key}\t{key}", f"Bearer {key} extra",
    ]


def expected_refusal(header: str) -> str:
    # Only "Bearer <something>" is read as a key (and found invalid); anything else is no key.
    scheme, _, value = header.partition(" ")
    return INVALID_KEY if scheme.lower() == "bearer" and value.strip() else MISSING_KEY


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


def not_tokens(a: Tenant) -> list[str]:
    token = a.tokens["source"]
    return [token[:-1] + ("A" if token[-1] != "A" else "B"), token[:-1], token + "A",
            token.swapcase(), vault_secrets.digest(token), a.key, a.files["source"]["id"],
            "A" * 43, "-" * 43]


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


class RecordingCollection:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    async def find_one(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append((args, kwargs))


class RecordingDb:
    def __init__(self) -> None:
        self.api_keys, self.links = RecordingCollection(), RecordingCollection()


async def test_keys_are_looked_up_by_their_hash_only() -> None:
    db, key = RecordingDb(), vault_secrets.new_api_key()
    assert await api_keys.resolve_key(db, key) is None  # type: ignore[arg-type]
    (args, kwargs), = db.api_keys.calls
    assert args[0] == {"hash": hashlib.sha256(key.encode()).hexdigest()}
    assert key not in repr((args, kwargs))  # the secret itself never leaves for the database


async def test_tokens_are_looked_up_by_their_hash_only() -> None:
    db, token = RecordingDb(), vault_secrets.new_token()
    with pytest.raises(NotFound):
        await LinkRecords().open(db, token)  # type: ignore[arg-type]
    (args, kwargs), = db.links.calls
    assert args[0]["hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr((args, kwargs))


def test_keys_and_tokens_come_from_the_os_csprng_not_the_random_module() -> None:
    random.seed(7)
    first = [vault_secrets.new_token(), vault_secrets.new_api_key()]
    random.seed(7)
    second = [vault_secrets.new_token(), vault_secrets.new_api_key()]
    assert first[0] != second[0] and first[1] != second[1]
    tokens = {vault_secrets.new_token() for _ in range(2000)}
    assert len(tokens) == 2000
    assert all(vault_secrets.is_token(t) for t in tokens)
    # 2000 tokens x 43 characters use the whole base64url alphabet (a weak generator often not).
    assert len(set("".join(tokens))) == 64


def test_the_server_log_holds_none_of_the_keys_and_tokens_created_here(
    vault: VaultProcess, a: Tenant, b: Tenant
) -> None:
    log = vault.log_text()
    leaked = [s[:12] + "…" for s in vault.secrets if s in log]
    assert not leaked, f"secrets found in the server log: {leaked}"

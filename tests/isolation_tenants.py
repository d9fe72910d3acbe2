"""Two tenants (accounts with files and links) and the requests one makes against the other, for
tests/test_isolation.py."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests import documents as docs
from tests.http_helpers import (
    INVALID_KEY,
    MISSING_KEY,
    create_link,
    upload_ok,
)
from tests.vault_process import VaultProcess
from vaultd import secrets as vault_secrets


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


def not_tokens(a: Tenant) -> list[str]:
    token = a.tokens["source"]
    return [token[:-1] + ("A" if token[-1] != "A" else "B"), token[:-1], token + "A",
            token.swapcase(), vault_secrets.digest(token), a.key, a.files["source"]["id"],
            "A" * 43, "-" * 43]

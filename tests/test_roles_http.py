"""Roles hold at the one point every route passes: a walk of `vaultd.web.app.all_routes()`
calls every route and method that changes something with an auditor's key (403 naming the
role, nothing changed), the account's own routes with a member's key (the same), and every read
with an auditor's key (200). A member cannot raise their own role or mint an admin key."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests import documents
from tests.http_helpers import assert_json_error, create_link, created, upload_ok
from tests.role_walk import (
    MEMBER_MANAGE,
    Records,
    assert_refused_unchanged,
    auditor_refusal,
    authenticated_routes,
    is_account_route,
    seed,
)
from tests.vault_process import VaultProcess
from vaultd.services.members.roles import Permission
from vaultd.web import account
from vaultd.web import app as app_module
from vaultd.web.app import RouteAuditError, all_routes
from vaultd.web.base import BaseHandler

CHANGES = [(p, m) for p, m in authenticated_routes() if m != "GET"]
READS = [(p, m) for p, m in authenticated_routes() if m == "GET"]


@pytest.fixture(scope="module")
def walk(vault: VaultProcess) -> Iterator[tuple[str, Records, dict[str, httpx.Client]]]:
    account_id, admin_key = vault.new_account(plan="business")
    with vault.client(admin_key) as admin:
        records = seed(admin)
        keys = {role: created(admin.post("/keys", json={"name": role, "role": role}))["key"]
                for role in ("member", "auditor")}
    vault.secrets.extend(keys.values())
    clients = {role: vault.client(key) for role, key in keys.items()}
    try:
        yield account_id, records, clients
    finally:
        for client in clients.values():
            client.close()


def test_the_walk_covers_the_routes_that_change_and_those_that_read() -> None:
    methods = set(CHANGES)
    for expected in [("/v1/files", "POST"), ("/v1/members/([^/]+)", "PATCH"),
                     ("/v1/keys", "POST"), ("/v1/webhooks/([^/]+)", "DELETE"),
                     ("/v1/rooms/([^/]+)/items/([^/]+)", "PATCH"), ("/v1/trace", "POST")]:
        assert expected in methods
    assert ("/v1/activity", "GET") in READS


@pytest.mark.parametrize(("pattern", "method"), CHANGES)
def test_an_auditor_changes_nothing_through_any_route(
        vault: VaultProcess, walk: tuple[str, Records, dict[str, httpx.Client]],
        pattern: str, method: str) -> None:
    account_id, records, clients = walk
    assert_refused_unchanged(vault, account_id, clients["auditor"], method, records.path(pattern),
                             auditor_refusal(pattern))


@pytest.mark.parametrize(("pattern", "method"),
                         [(p, m) for p, m in CHANGES if is_account_route(p)])
def test_a_member_cannot_manage_the_account(
        vault: VaultProcess, walk: tuple[str, Records, dict[str, httpx.Client]],
        pattern: str, method: str) -> None:
    account_id, records, clients = walk
    assert_refused_unchanged(vault, account_id, clients["member"], method, records.path(pattern),
                             MEMBER_MANAGE)


@pytest.mark.parametrize(("pattern", "method"), READS)
def test_an_auditor_reads_everything(
        walk: tuple[str, Records, dict[str, httpx.Client]], pattern: str, method: str) -> None:
    _, records, clients = walk
    response = clients["auditor"].get(records.path(pattern))
    assert response.status_code == 200, (pattern, response.text)


def test_a_member_changes_content_but_cannot_raise_their_own_role(
        walk: tuple[str, Records, dict[str, httpx.Client]]) -> None:
    _, records, clients = walk
    member = clients["member"]
    file = upload_ok(member, documents.pdf(1))
    token = create_link(member, file["id"])["token"]
    assert member.get(f"/views/{token}").status_code == 200
    assert_json_error(member.patch(f"/members/{records.ids['members']}",
                                   json={"role": "admin"}), 403, MEMBER_MANAGE)
    assert_json_error(member.post("/keys", json={"name": "mine", "role": "admin"}), 403,
                      MEMBER_MANAGE)
    assert_json_error(member.post("/members", json={"email": "me2@example.com",
                                                    "role": "admin"}), 403, MEMBER_MANAGE)
    listed = {m["email"]: m["role"] for m in member.get("/members").json()["members"]}
    assert listed == {"walk@example.com": "member"}
    roles = sorted(k["role"] for k in member.get("/keys").json()["keys"] if not k["revokedAt"])
    assert roles == ["admin", "auditor", "member", "member"]


class Undeclared(BaseHandler):
    async def post(self) -> None:
        self.send_empty(204)


class DeferredWriter(BaseHandler):
    deferred_auth = True

    async def delete(self) -> None:
        self.send_empty(204)


def test_an_app_with_a_route_that_declares_no_permission_does_not_start() -> None:
    with pytest.raises(RouteAuditError, match=r"^route /v1/undeclared POST declares no "
                                               r"permission$"):
        app_module._audit([*all_routes(), ("/v1/undeclared", Undeclared)])
    account.PERMISSIONS["/v1/deferred"] = {"DELETE": Permission.CHANGE_CONTENT}
    try:
        with pytest.raises(RouteAuditError, match=r"^route /v1/deferred checks its key "
                                                   r"itself: it may need READ only$"):
            app_module._audit([("/v1/deferred", DeferredWriter)])
    finally:
        del account.PERMISSIONS["/v1/deferred"]
    app_module._audit(all_routes())  # the real table names every route and method
    app_module._audit_table(all_routes())
    renamed = [(p.replace("/v1/keys", "/v1/api-keys"), h) for p, h in all_routes()]
    with pytest.raises(RouteAuditError, match=r"^a permission is declared for /v1/keys, which "
                                               r"no route serves$"):
        app_module._audit_table(renamed)

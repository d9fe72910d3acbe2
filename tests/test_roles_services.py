"""Roles held by the services themselves (`members.callers.require_caller`), not only by the
route table the web layer checks first: each service that changes an account's content, traces
for it or manages it refuses a caller whose role lacks the permission before it touches
anything (here: no database at all, so a refusal can only come from the role check). The walks
over HTTP (tests/test_roles_http.py with keys, tests/test_roles_sessions.py with members'
sessions) show no route reaches past the same roles."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextvars import copy_context
from typing import Any

import pytest

from vaultd.errors import Forbidden
from vaultd.services.files import deletions
from vaultd.services.files.uploads import UploadSession
from vaultd.services.gates import agreements
from vaultd.services.links import link_expiry, links
from vaultd.services.links.links import LinkRequest
from vaultd.services.members.actor import Actor
from vaultd.services.members.callers import set_caller
from vaultd.services.members.roles import Permission, Role, allows
from vaultd.services.rooms import items, records, room_deletions, room_links
from vaultd.services.tracing import trace_batch
from vaultd.services.webhooks import webhook_test_event, webhooks

FILE_ID = "7d4f0e0c-52a4-4d8c-9a55-0b8f3b1f2a10"
NOTHING: Any = None  # the services are refused before they read any argument but the caller
ROOM: Any = {"_id": "room", "accountId": "acct"}
REQUEST = LinkRequest(file_id="file", viewer_email="v@example.com", viewer_name="V",
                      ttl_seconds=3600)

Call = Callable[[], Coroutine[Any, Any, Any] | object]

# Every service a changing route of /v1 or of the console calls, with what it needs.
GUARDED: dict[str, tuple[Permission, Call]] = {
    "deletions.delete_file": (Permission.CHANGE_CONTENT, lambda: deletions.delete_file(
        NOTHING, NOTHING, "acct", "file", "me")),
    "UploadSession": (Permission.CHANGE_CONTENT,
                      lambda: UploadSession(NOTHING, NOTHING, NOTHING, "a.pdf", "view", "me")),
    "links.create_link": (Permission.CHANGE_CONTENT,
                          lambda: links.create_link(NOTHING, NOTHING, REQUEST)),
    "links.revoke_link": (Permission.CHANGE_CONTENT,
                          lambda: links.revoke_link(NOTHING, "acct", "token")),
    "links.revoke_link_id": (Permission.CHANGE_CONTENT,
                             lambda: links.revoke_link_id(NOTHING, "acct", "file", "link")),
    "links.revoke_file_links": (Permission.CHANGE_CONTENT,
                                lambda: links.revoke_file_links(NOTHING, "acct", FILE_ID)),
    "link_expiry.extend_by_token": (Permission.CHANGE_CONTENT, lambda: link_expiry.extend_by_token(
        NOTHING, NOTHING, "token", NOTHING)),
    "records.create_room": (Permission.CHANGE_CONTENT,
                            lambda: records.create_room(NOTHING, NOTHING, "Deal")),
    "records.rename_room": (Permission.CHANGE_CONTENT,
                            lambda: records.rename_room(NOTHING, "acct", "room", "Deal")),
    "room_deletions.delete_room": (Permission.CHANGE_CONTENT, lambda: room_deletions.delete_room(
        NOTHING, "acct", "room", "vaultd-test")),
    "items.add_folder": (Permission.CHANGE_CONTENT, lambda: items.add_folder(NOTHING, ROOM, {})),
    "items.add_file": (Permission.CHANGE_CONTENT, lambda: items.add_file(NOTHING, ROOM, {})),
    "items.update_item": (Permission.CHANGE_CONTENT,
                          lambda: items.update_item(NOTHING, ROOM, "item", {})),
    "items.delete_item": (Permission.CHANGE_CONTENT,
                          lambda: items.delete_item(NOTHING, ROOM, "item")),
    "room_links.create": (Permission.CHANGE_CONTENT,
                          lambda: room_links.create(NOTHING, ROOM, NOTHING)),
    "room_links.revoke_all": (Permission.CHANGE_CONTENT,
                              lambda: room_links.revoke_all(NOTHING, ROOM, "vaultd-test")),
    "agreements.create_agreement": (Permission.CHANGE_CONTENT, lambda: (
        agreements.create_agreement(NOTHING, NOTHING, "N", "T"))),
    "trace_batch.trace_batch": (Permission.TRACE, lambda: trace_batch.trace_batch(
        NOTHING, NOTHING, NOTHING, [])),
    "webhooks.create_endpoint": (Permission.MANAGE_ACCOUNT, lambda: webhooks.create_endpoint(
        NOTHING, NOTHING, NOTHING, NOTHING)),
    "webhooks.delete_endpoint": (Permission.MANAGE_ACCOUNT,
                                 lambda: webhooks.delete_endpoint(NOTHING, "acct", "ep")),
    "webhook_test_event.send_test_event": (Permission.MANAGE_ACCOUNT, lambda: (
        webhook_test_event.send_test_event(NOTHING, NOTHING, "ep"))),
}


def as_caller(actor: Actor | None, call: Call) -> Any:
    """The call made in a context of its own whose caller is `actor`, as a request's is."""
    def run() -> Any:
        set_caller(actor)
        made = call()
        return asyncio.run(made) if asyncio.iscoroutine(made) else made
    return copy_context().run(run)


def actor(role: Role, kind: str = "member", label: str = "lee@example.com") -> Actor:
    return Actor(account_id="acct", role=role, kind=kind, id="m1", label=label)  # type: ignore[arg-type]


REFUSALS = [(name, role) for name, (permission, _) in GUARDED.items()
            for role in Role if not allows(role, permission)]


@pytest.mark.parametrize(("name", "role"), REFUSALS, ids=[f"{n}-{r.value}" for n, r in REFUSALS])
def test_a_role_without_the_permission_is_refused_by_the_service(name: str, role: Role) -> None:
    permission, call = GUARDED[name]
    with pytest.raises(Forbidden) as refused:
        as_caller(actor(role), call)
    assert str(refused.value) == f"the {role.value} role cannot {permission.value}"


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_a_role_with_the_permission_gets_past_the_check(name: str) -> None:
    # Past the role check the service reaches for the database it was not given (or, for an
    # upload, only sets itself up): anything but Forbidden shows the check let the caller by.
    _, call = GUARDED[name]
    for caller in (actor(Role.ADMIN), None):  # an admin's request; the operator's CLI
        try:
            as_caller(caller, call)
        except Forbidden:
            raise
        except Exception:  # past the check, the missing database: as expected
            pass


def test_every_role_lacks_something_the_table_guards() -> None:
    # The table covers each permission below admin, so no role's refusals go untried.
    assert {role for _, role in REFUSALS} == {Role.MEMBER, Role.AUDITOR}
    assert {permission for permission, _ in GUARDED.values()} == {
        Permission.CHANGE_CONTENT, Permission.TRACE, Permission.MANAGE_ACCOUNT}


def test_a_preview_is_for_the_member_who_asks_and_any_role_may_ask() -> None:
    with pytest.raises(Forbidden) as refused:
        as_caller(actor(Role.AUDITOR, label="someone@example.com"),
                  lambda: links.create_own_preview(NOTHING, NOTHING, REQUEST))
    assert str(refused.value) == "a preview is for the member who asks for it"
    with pytest.raises(Exception) as past:  # their own address: past the checks, to the database
        as_caller(actor(Role.AUDITOR, label="v@example.com"),
                  lambda: links.create_own_preview(NOTHING, NOTHING, REQUEST))
    assert not isinstance(past.value, Forbidden), past.value

"""Roles hold for signed-in people as for keys: the walk of tests/test_roles_http.py made again
with an auditor's and a member's real session (signed in by the operator's link), through the
console's API (`/console/api`, every `/v1` route that changes something) and through every form
of the console's pages (`/console/...`, from `vaultd.web.app.all_routes()`). Each forbidden call
is a 403 naming the role, with a digest of everything the account holds unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.http_helpers import assert_json_error, created
from tests.role_walk import (
    AUDITOR_CHANGE,
    AUDITOR_MANAGE,
    AUDITOR_TRACE,
    MEMBER_MANAGE,
    Records,
    assert_refused_unchanged,
    auditor_refusal,
    authenticated_routes,
    fingerprint,
    is_account_route,
    seed,
)
from tests.vault_process import VaultProcess
from vaultd.web.app import all_routes, served_methods

# The console's forms that need only READ, so every role may post them: a member's own
# notification choices, and a short link for the person themself to look at a file.
OWN_FORMS = frozenset({("/console/files/([^/]+)/preview", "POST"),
                       ("/console/settings/notifications", "POST")})


def console_forms() -> list[tuple[str, str]]:
    """(pattern, method) of every signed-in page route that changes something."""
    return [(pattern, method) for pattern, handler in all_routes()
            if pattern.startswith("/console/") and not handler.public
            for method in served_methods(handler) if method != "GET"]


def form_refusal(role: str, pattern: str) -> str | None:
    """What `role` is told for a form of the console (None: the role may post it)."""
    if pattern.startswith("/console/settings/"):
        return AUDITOR_MANAGE if role == "auditor" else MEMBER_MANAGE
    if role == "member":
        return None
    return AUDITOR_TRACE if pattern == "/console/trace" else AUDITOR_CHANGE


CHANGES = [(p, m) for p, m in authenticated_routes() if m != "GET"]
FORMS = [form for form in console_forms() if form not in OWN_FORMS]
# (role, pattern, method, refusal) of every form the role may not post.
REFUSED_FORMS = [(role, pattern, method, refusal) for role in ("auditor", "member")
                 for pattern, method in FORMS
                 if (refusal := form_refusal(role, pattern)) is not None]


def signed_in(vault: VaultProcess, account_id: str, email: str) -> httpx.Client:
    """A browser holding `email`'s session, opened by the operator's one-time link, with the
    site's own Origin and the session's CSRF token on every request (as the console sends)."""
    url = vault.admin("members", "sign-in-link", account_id, email).stdout.strip()
    token = urlsplit(url).path.rsplit("/", 1)[1]
    vault.secrets.append(token)
    client = httpx.Client(base_url=vault.url, timeout=60, headers={"Origin": vault.url})
    assert client.get(f"/console/auth/link/{token}").status_code == 303
    vault.secrets.append(client.cookies["vaultd_session"])
    csrf = client.get("/console/auth/session").json()["csrfToken"]
    client.headers["X-CSRF-Token"] = csrf
    return client


@pytest.fixture(scope="module")
def walk(vault: VaultProcess) -> Iterator[tuple[str, Records, dict[str, httpx.Client]]]:
    account_id, admin_key = vault.new_account(name="Session Walk", plan="business")
    with vault.client(admin_key) as admin:
        records = seed(admin)
        records.ids["links"] = admin.get(f"/files/{records.ids['files']}/views"
                                         ).json()["views"][0]["id"]
        for role in ("auditor", "member"):
            created(admin.post("/members", json={"email": f"{role}@walk.example",
                                                 "role": role}))
    clients = {role: signed_in(vault, account_id, f"{role}@walk.example")
               for role in ("auditor", "member")}
    try:
        yield account_id, records, clients
    finally:
        for client in clients.values():
            client.close()


def test_the_walk_covers_the_console_s_api_and_every_form() -> None:
    assert ("/v1/members/([^/]+)", "PATCH") in CHANGES and ("/v1/files", "POST") in CHANGES
    for expected in [("/console/files/([^/]+)/delete", "POST"),
                     ("/console/settings/members/([^/]+)/role", "POST"),
                     ("/console/settings/branding", "POST"), ("/console/trace", "POST"),
                     ("/console/rooms/([^/]+)/share", "POST")]:
        assert expected in FORMS
    assert set(console_forms()) >= OWN_FORMS
    # A member is refused the account's forms only; an auditor every form.
    assert {p for r, p, _, _ in REFUSED_FORMS if r == "member"} == {
        p for p, _ in FORMS if p.startswith("/console/settings/")}
    assert len([r for r, *_ in REFUSED_FORMS if r == "auditor"]) == len(FORMS)


@pytest.mark.parametrize(("pattern", "method"), CHANGES)
def test_an_auditor_s_session_changes_nothing_through_the_console_s_api(
        vault: VaultProcess, walk: tuple[str, Records, dict[str, httpx.Client]],
        pattern: str, method: str) -> None:
    account_id, records, clients = walk
    assert_refused_unchanged(vault, account_id, clients["auditor"], method,
                             "/console/api" + records.path(pattern), auditor_refusal(pattern))


@pytest.mark.parametrize(("pattern", "method"),
                         [(p, m) for p, m in CHANGES if is_account_route(p)])
def test_a_member_s_session_cannot_manage_the_account_through_the_console_s_api(
        vault: VaultProcess, walk: tuple[str, Records, dict[str, httpx.Client]],
        pattern: str, method: str) -> None:
    account_id, records, clients = walk
    assert_refused_unchanged(vault, account_id, clients["member"], method,
                             "/console/api" + records.path(pattern), MEMBER_MANAGE)


@pytest.mark.parametrize(("role", "pattern", "method", "refusal"), REFUSED_FORMS)
def test_a_form_the_role_may_not_post_is_refused_and_changes_nothing(
        vault: VaultProcess, walk: tuple[str, Records, dict[str, httpx.Client]],
        role: str, pattern: str, method: str, refusal: str) -> None:
    account_id, records, clients = walk
    before = fingerprint(vault, account_id)
    response = clients[role].request(method, records.path(pattern),
                                     data={"_csrf": clients[role].headers["X-CSRF-Token"]})
    assert_json_error(response, 403, refusal)
    assert fingerprint(vault, account_id) == before

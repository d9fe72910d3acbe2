"""The routes `bench.scale_shapes` times, and a signed-in client of one vaultd.

Every listed newest-first read as a caller asks it: the file listing's first page
and a deep one, the busiest file's links (all, and by state), its access log, the account's
access log (the console's Activity page of file actions: no `/v1` route lists it), a room's
log, the activity log, an endpoint's deliveries, the signed-in person's sessions, the
account. The API routes carry the account's key, the console's its admin's session cookie
(signed in by the operator's one-time link, `vault-admin members sign-in-link`, as a first
admin is). Each answer's items are counted, so a table shows what each side returned.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from bench.scale_shape_seeds import ADMIN, Seeded
from tests.vault_process import VaultProcess

LINK_PATH = "/console/auth/link/"
SESSION_COOKIE = "vaultd_session"
DEEP_PAGE, PER_PAGE = 40, 25
SIGN_IN_ATTEMPTS = 30


def _listed(key: str) -> Callable[[Any], int]:
    return lambda body: len(body[key])


def _entries(body: Any) -> int:
    return len(body)


def _table_rows(html: str) -> int:
    """Rows of the console's Activity table: every `<tr>` but the header's and the empty
    table's one line."""
    return html.count("<tr>") - 1 - ('colspan="6">Nothing' in html)


@dataclass(frozen=True)
class Route:
    name: str
    path: str  # with {file}, {room}, {endpoint} for the seeded ids
    count: Callable[[Any], int]  # items in the answer (JSON, or the HTML for the console)
    console: bool = False  # with the admin's session rather than the account's key
    depth: int = 0  # the records before a deep page: what it reads besides its own


def routes() -> list[Route]:
    return [
        Route("GET /v1/files (page 1, 25)", "/v1/files?page=1&perPage=25", _listed("files")),
        Route(f"GET /v1/files (page {DEEP_PAGE}, 25)",
              f"/v1/files?page={DEEP_PAGE}&perPage={PER_PAGE}", _listed("files"),
              depth=(DEEP_PAGE - 1) * PER_PAGE),
        Route("GET /v1/files/:id/views (page 1, 20)", "/v1/files/{file}/views?page=1&perPage=20",
              _listed("views")),
        Route("GET /v1/files/:id/views?state=active", "/v1/files/{file}/views?state=active"
              "&page=1&perPage=20", _listed("views")),
        Route("GET /v1/files/:id/access-log", "/v1/files/{file}/access-log", _entries),
        Route("GET /console/activity?feed=files (the account's log)",
              "/console/activity?feed=files", _table_rows, console=True),
        Route("GET /v1/rooms/:id/access-log", "/v1/rooms/{room}/access-log", _entries),
        Route("GET /v1/activity", "/v1/activity", _listed("entries")),
        Route("GET /v1/webhooks/:id/deliveries", "/v1/webhooks/{endpoint}/deliveries",
              _listed("deliveries")),
        Route("GET /console/auth/sessions", "/console/auth/sessions", _listed("sessions"),
              console=True),
        Route("GET /v1/account", "/v1/account", lambda body: int(bool(body.get("id")))),
    ]


@dataclass
class Answer:
    seconds: float
    returned: int  # items in a 200's answer; 0 for another status
    status: int = 200
    error: str = ""  # the `error` of an answer other than 200


class Session:
    """One keep-alive connection to a vaultd, with the account's key and its admin's cookie."""

    def __init__(self, port: int, seeded: Seeded, cookie: str) -> None:
        self.port, self.seeded, self.cookie = port, seeded, cookie
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def _headers(self, route: Route) -> dict[str, str]:
        if route.console:
            return {"Cookie": f"{SESSION_COOKIE}={self.cookie}", "Accept": "text/html"}
        return {"Authorization": f"Bearer {self.seeded.key}"}

    def ask(self, route: Route) -> Answer:
        seeded = self.seeded
        path = route.path.format(file=seeded.busy_file, room=seeded.room_id,
                                 endpoint=seeded.endpoint_id)
        started = time.perf_counter()
        try:
            reply, body = self._get(path, route)
        except (http.client.HTTPException, OSError):
            # vaultd closed the idle keep-alive connection (while another shape was seeded):
            # once more on a new one
            self._conn.close()
            self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            started = time.perf_counter()
            reply, body = self._get(path, route)
        seconds = time.perf_counter() - started
        text = body.decode()
        if reply.status != 200:
            return Answer(seconds, 0, reply.status, _error(text))
        return Answer(seconds, route.count(text if "html" in reply.getheader(
            "Content-Type", "") else json.loads(text)))

    def _get(self, path: str, route: Route) -> tuple[http.client.HTTPResponse, bytes]:
        self._conn.request("GET", path, headers=self._headers(route))
        reply = self._conn.getresponse()
        return reply, reply.read()

    def close(self) -> None:
        self._conn.close()


def _error(text: str) -> str:
    """The API's `error`, or the console's error page's message (a table cell's worth)."""
    try:
        return f"`{json.loads(text)['error']}`"
    except (ValueError, KeyError, TypeError):
        alert = re.search(r'role="alert">([^<]*)<', text)
        return f"page `{alert[1].strip()}`" if alert else " ".join(text.split())[:60]


def signed_in(vault: VaultProcess, seeded: Seeded) -> Session:
    """A session on the admin's seeded session (a shape's), else one signed in by the link."""
    if not seeded.session:
        return sign_in(vault, seeded)
    vault.secrets.append(seeded.session)
    return Session(vault.port, seeded, seeded.session)


def kept_signed_in(vault: VaultProcess, session: Session) -> Session:
    """`session`, or a new one signed in by the link where it has ended. A reference vault's
    session sits idle while a shape is seeded (83 minutes for the link bursts at 10^6), past
    `auth.session_idle_minutes`, and its console routes would answer "not signed in"."""
    console = next(route for route in routes() if route.console)
    if session.ask(console).status == 200:
        return session
    session.close()
    return sign_in(vault, session.seeded)


def sign_in(vault: VaultProcess, seeded: Seeded) -> Session:
    """The seeded admin signed in by the operator's one-time link; a new link while vaultd
    answers 503 (its database still busy with the bulk seeding's writes, SIGN_IN_ATTEMPTS at
    most), as a person would ask for one."""
    for _ in range(SIGN_IN_ATTEMPTS):
        cookie = _opened_link(vault, seeded)
        if cookie is not None:
            break
    else:
        raise RuntimeError(f"the sign-in link answered 503 {SIGN_IN_ATTEMPTS} times")
    if SESSION_COOKIE not in cookie:
        raise RuntimeError(f"the sign-in link set no {SESSION_COOKIE} cookie")
    value = cookie[SESSION_COOKIE].value
    vault.secrets.append(value)
    return Session(vault.port, seeded, value)


def _opened_link(vault: VaultProcess, seeded: Seeded) -> SimpleCookie | None:
    """The cookies a new one-time link sets; None where vaultd answered 503."""
    url = vault.admin_json("members", "sign-in-link", seeded.account_id, ADMIN)["url"]
    token = str(url).split(LINK_PATH, 1)[1]
    vault.secrets.append(token)
    conn = http.client.HTTPConnection("127.0.0.1", vault.port, timeout=60)
    try:
        conn.request("GET", f"{LINK_PATH}{token}")
        reply = conn.getresponse()
        text = reply.read().decode(errors="replace")
        if reply.status == 503:
            print(f"the sign-in link answered 503 {_error(text)}; a new link", flush=True)
            return None
        if reply.status != 303:
            raise RuntimeError(f"the sign-in link answered {reply.status} {_error(text)}")
        cookie: SimpleCookie = SimpleCookie()
        for header in reply.msg.get_all("Set-Cookie") or []:
            cookie.load(header)
        return cookie
    finally:
        conn.close()

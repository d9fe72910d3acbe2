"""Every route of a gated link admits it the same way: walked from the route table
(`vaultd.web.app.all_routes()`), each route of a file link or a room link, API and hosted, with
each method its handler serves, is asked from a refused address and before `notBefore`, and
must refuse (403 and the gate's message). A route added later without the admission fails
here; the owner's own routes about a link (revoking it, its analytics) are listed apart, each
with why it is not a reader's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
import tornado.web

from tests import documents as docs
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import VaultProcess
from vaultd.timefmt import iso_utc, utcnow
from vaultd.web.app import all_routes

PASSCODE = "gate keeper"
ALLOWED, REFUSED = "203.0.113.0/24", "198.51.100.9"
IP_REFUSED = "this link cannot be used from the viewer's IP address"
NOT_YET = re.compile(r"this link cannot be used before \d{4}-\d\d-\d\dT[0-9:.]+Z")
METHODS = ("get", "post", "put", "patch", "delete")
LINK_ROUTE = re.compile(r"^/(v|r|v1/views|v1/room-views)/\(\[\^/\]\+\)(/.*)?$")
# The owner's routes about a link, not a reader's: no reader's address or time applies.
OWNERS = {
    ("/v1/views/([^/]+)", "delete"),  # revoking the link
    ("/v1/views/([^/]+)", "patch"),  # the owner's new expiry for the link
    ("/v1/room-views/([^/]+)", "delete"),  # revoking the room link
    ("/v1/views/([^/]+)/analytics", "get"),  # the owner's reading-time report
}
# A body each POST accepts, so what is judged is the link, not the body.
BODIES: dict[str, dict[str, Any]] = {
    "passcode": {"passcode": PASSCODE}, "verify": {"code": "123456"},
    "agreement": {"name": "Rita Reader"}, "activity": {"pages": {}},
}


@dataclass(frozen=True)
class Links:
    file_token: str
    room_token: str
    file_id: str
    file_session: str  # an API session of each link, opened from the allowed address
    room_session: str


def link_routes() -> list[tuple[str, str]]:
    """(pattern, method) of every reader's route of a link, from the route table."""
    found = []
    for pattern, handler in all_routes():
        if not LINK_ROUTE.match(pattern):
            continue
        for method in METHODS:
            if getattr(handler, method) is getattr(tornado.web.RequestHandler, method):
                continue
            if (pattern, method) not in OWNERS:
                found.append((pattern, method))
    return found


def urls(pattern: str, links: Links, fake_session: bool) -> list[str]:
    """The pattern filled in for the gated file link or room link (one URL per alternative)."""
    room = pattern.startswith(("/r/", "/v1/room-views/"))
    token = links.room_token if room else links.file_token
    session = "s" * 43 if fake_session else (links.room_session if room else links.file_session)
    path = pattern.replace("([^/]+)", token, 1)
    path = re.sub(r"/sessions/\(\[\^/\]\+\)", f"/sessions/{session}", path)
    path = path.replace("/files/([^/]+)", f"/files/{links.file_id}").replace(
        "/pages/([^/]+)", "/pages/1")
    assert "([^/]+)" not in path, f"a route this test cannot fill in: {pattern}"
    choice = re.search(r"\(([a-z|]+)\)", path)
    if choice is None:
        return [path]
    return [path.replace(choice.group(0), option) for option in choice.group(1).split("|")]


def ask(api: httpx.Client, vault: VaultProcess, method: str, path: str, ip: str,
        session: str = "s" * 43) -> httpx.Response:
    body = BODIES.get(path.rsplit("/", 1)[-1], {}) if method == "post" else None
    if path.startswith("/v1/"):
        return api.request(method.upper(), path.removeprefix("/v1"), json=body,
                           headers={"x-viewer-ip": ip, "x-viewer-session": session})
    return httpx.request(method.upper(), vault.url + path, json=body, timeout=60,
                         follow_redirects=False)


def assert_refused(response: httpx.Response, message: str | re.Pattern[str], where: str
                   ) -> None:
    if response.headers.get("content-type", "").startswith("text/html"):
        assert response.status_code == 403, (where, response.status_code)
        text = response.text.replace("&#x27;", "'")
        found = message.search(text) if isinstance(message, re.Pattern) else message in text
        assert found, (where, text[:500])
        # A refusal names neither the document nor its reader.
        assert "Board minutes" not in text and "@example.com" not in text, (where, text[:500])
        return
    try:
        assert_json_error(response, 403, message)
    except AssertionError as refused:
        raise AssertionError(where) from refused


def make_links(api: httpx.Client, vault: VaultProcess, open_sessions: bool,
               **policy: Any) -> Links:
    file = upload_ok(api, docs.pdf(pages=1), name="Board minutes.pdf")
    file_token = create_link(api, file["id"], policy=policy)["token"]
    room = create_room(api, "Gated room")
    add_file(api, room["id"], file["id"])
    room_token = room_link(api, room["id"], policy=policy)["token"]
    vault.secrets += [file_token, room_token]
    sessions = ["s" * 43, "s" * 43]
    if open_sessions:
        inside = {"x-viewer-ip": ALLOWED.replace("0/24", "5")}
        for n, base in enumerate((f"/views/{file_token}", f"/room-views/{room_token}")):
            opened = api.post(f"{base}/sessions", headers=inside)
            assert opened.status_code == 201, opened.text
            sessions[n] = opened.json()["sessionId"]
            vault.secrets.append(sessions[n])
    return Links(file_token, room_token, file["id"], *sessions)


def test_the_walk_finds_the_routes_of_both_kinds_of_link() -> None:
    found = {pattern for pattern, _ in link_routes()}
    for expected in ("/v/([^/]+)/pages/([^/]+)", "/r/([^/]+)/files/([^/]+)",
                     "/v1/room-views/([^/]+)/sessions/([^/]+)/passcode",
                     "/r/([^/]+)/session/(code|verify|passcode|agreement)"):
        assert expected in found
    assert len(found) >= 25


@pytest.mark.parametrize("policy", [{"passcode": PASSCODE, "maxOpens": 5}, {"maxOpens": 5}],
                         ids=["session-pending", "session-admitted"])
def test_every_route_of_a_gated_link_refuses_a_refused_address(
        api: httpx.Client, vault: VaultProcess, policy: dict[str, Any]) -> None:
    """The API's requests carry the session opened from inside the range (admitted at once
    where `maxOpens` is the only gate): a reader's session taken elsewhere is refused too."""
    links = make_links(api, vault, open_sessions=True, allowedIps=[ALLOWED], **policy)
    for pattern, method in link_routes():
        room = pattern.startswith(("/r/", "/v1/room-views/"))
        session = links.room_session if room else links.file_session
        # The hosted viewer's reader is the loopback client: outside the allowed range.
        for path in urls(pattern, links, fake_session=False):
            assert_refused(ask(api, vault, method, path, REFUSED, session), IP_REFUSED,
                           f"{method.upper()} {path}")


def test_every_route_of_a_gated_link_refuses_before_not_before(
        api: httpx.Client, vault: VaultProcess) -> None:
    later = iso_utc(utcnow() + timedelta(minutes=20))  # before the default expiry
    links = make_links(api, vault, open_sessions=False, notBefore=later, passcode=PASSCODE)
    for pattern, method in link_routes():
        for path in urls(pattern, links, fake_session=True):
            assert_refused(ask(api, vault, method, path, "203.0.113.5"), NOT_YET,
                           f"{method.upper()} {path}")


@pytest.mark.parametrize("policy", [{"maxOpens": 2}, {"passcode": PASSCODE}])
def test_a_reader_admitted_from_the_allowed_address_is_not_refused_by_the_walk(
        api: httpx.Client, vault: VaultProcess, policy: dict[str, Any]) -> None:
    """The walk's refusals are the gates', not its own URLs': the same pages, asked in an
    admitted session from inside the range, are served."""
    links = make_links(api, vault, open_sessions=True, allowedIps=[ALLOWED], **policy)
    session = links.file_session
    if "passcode" in policy:
        passed = api.post(f"/views/{links.file_token}/sessions/{session}/passcode",
                          json={"passcode": PASSCODE}, headers={"x-viewer-ip": "203.0.113.5"})
        session = passed.json()["sessionId"]
        vault.secrets.append(session)
    page = api.get(f"/views/{links.file_token}/pages/1",
                   headers={"x-viewer-ip": "203.0.113.5", "x-viewer-session": session})
    assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"

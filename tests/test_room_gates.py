"""Gates on room links: the file links' `policy`, sessions and checks
on a room link, over the proxy API and the hosted room viewer, tested by getting around them:
a forwarded link without a session, guessed passcodes, a session or cookie replayed across
links (file <-> room), a session from before a revoke, a direct page URL, and an acceptance
claimed without the POST."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.gate_helpers import COOKIE, SESSION_GONE, pending
from tests.http_helpers import LINK_GONE, assert_json_error, create_link, upload_ok
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess
from vaultd.secrets import digest
from vaultd.timefmt import utcnow

PASSCODE = "harbour lights"


@pytest.fixture
def room(api: httpx.Client) -> dict[str, Any]:
    """A room with one document in a folder: (room, file)."""
    made = create_room(api, "Deal room")
    folder = add_folder(api, made["id"], "Legal")
    file = upload_ok(api, docs.pdf(pages=2), name="Terms.pdf")
    add_file(api, made["id"], file["id"], folder=folder["id"])
    return {**made, "file": file}


def gated(api: httpx.Client, room: dict[str, Any], vault: VaultProcess,
          **policy: Any) -> str:
    token: str = room_link(api, room["id"], policy=policy)["token"]
    vault.secrets.append(token)
    return token


def open_session(api: httpx.Client, token: str, vault: VaultProcess) -> str:
    response = api.post(f"/room-views/{token}/sessions")
    assert response.status_code == 201, response.text
    session: str = response.json()["sessionId"]
    vault.secrets.append(session)
    return session


def give_passcode(api: httpx.Client, token: str, session: str, vault: VaultProcess) -> str:
    """The passcode given in `session`: the session's new id (the old one has ended)."""
    passed = api.post(f"/room-views/{token}/sessions/{session}/passcode",
                      json={"passcode": PASSCODE})
    assert passed.status_code == 200, passed.text
    renewed: str = passed.json()["sessionId"]
    vault.secrets.append(renewed)
    return renewed


def page(api: httpx.Client, token: str, file_id: str, session: str | None = None
         ) -> httpx.Response:
    headers = {"x-viewer-session": session} if session else {}
    return api.get(f"/room-views/{token}/files/{file_id}/pages/1", headers=headers)


@contextmanager
def hosted(vault: VaultProcess, token: str) -> Iterator[httpx.Client]:
    """A cookie-keeping client that opened the room link's gate screen."""
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        response = browser.get(f"/r/{token}")
        assert response.status_code == 200
        assert 'id="passcode-form"' in response.text and "room-item" not in response.text
        vault.secrets.append(browser.cookies[COOKIE])
        yield browser


def test_a_forwarded_room_link_serves_no_page_without_a_session_that_passed(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, room, vault, passcode=PASSCODE)
    file_id = room["file"]["id"]
    assert_json_error(page(api, token, file_id), 403, pending("passcode"))
    assert_json_error(httpx.get(f"{vault.url}/r/{token}/files/{file_id}/pages/1"), 403,
                      pending("passcode"))
    session = open_session(api, token, vault)
    assert_json_error(page(api, token, file_id, session), 403, pending("passcode"))
    passed = api.post(f"/room-views/{token}/sessions/{session}/passcode",
                      json={"passcode": PASSCODE})
    assert passed.status_code == 200 and passed.json()["pending"] == []
    assert_json_error(page(api, token, file_id, session), 403, pending("passcode"))  # ended
    served = page(api, token, file_id, passed.json()["sessionId"])
    assert served.status_code == 200 and served.headers["content-type"] == "image/jpeg"
    # The gate's entries are the room's: roomId, no fileId; the file's log has none of them.
    entries = api.get(f"/rooms/{room['id']}/access-log", params={"action": "verify"}).json()
    assert [(e["detail"]["step"], e["roomId"], "fileId" in e) for e in entries] == [
        ("passcode", room["id"], False)]
    assert api.get(f"/files/{file_id}/access-log", params={"action": "verify"}).json() == []


def test_the_room_links_details_show_its_policy_without_the_passcode(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, room, vault, passcode=PASSCODE, maxOpens=3,
                  allowedIps=["203.0.113.0/24"])
    viewer = {"x-viewer-ip": "203.0.113.9"}
    details = api.get(f"/room-views/{token}", headers=viewer).json()
    assert details["policy"] == {"passcode": True, "allowedIps": ["203.0.113.0/24"],
                                 "maxOpens": 3}
    assert details["sessions"] == []
    assert PASSCODE not in api.get(f"/room-views/{token}", headers=viewer).text
    assert_json_error(api.get(f"/room-views/{token}", headers={"x-viewer-ip": "198.51.100.1"}),
                      403, "this link cannot be used from the viewer's IP address")
    ungated = room_link(api, room["id"])
    vault.secrets.append(ungated["token"])
    assert "policy" not in api.get(f"/room-views/{ungated['token']}").json()


def test_guessing_a_room_links_passcode_stops_after_five_tries(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, room, vault, passcode=PASSCODE)
    session = open_session(api, token, vault)
    url = f"/room-views/{token}/sessions/{session}/passcode"
    for guess in range(5):
        assert_json_error(api.post(url, json={"passcode": f"guess {guess}"}), 403,
                          "passcode is not correct")
    assert_json_error(api.post(url, json={"passcode": PASSCODE}), 429,
                      "too many passcode tries in this session: open a new session")
    assert_json_error(page(api, token, room["file"]["id"], session), 403, pending("passcode"))


def test_sessions_do_not_cross_between_file_links_and_room_links(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    file_id = room["file"]["id"]
    room_token = gated(api, room, vault, passcode=PASSCODE)
    file_token = create_link(api, file_id, policy={"passcode": PASSCODE})["token"]
    vault.secrets.append(file_token)
    file_session = api.post(f"/views/{file_token}/sessions").json()["sessionId"]
    vault.secrets.append(file_session)
    file_session = api.post(f"/views/{file_token}/sessions/{file_session}/passcode",
                            json={"passcode": PASSCODE}).json()["sessionId"]
    vault.secrets.append(file_session)
    assert api.get(f"/views/{file_token}/pages/1",
                   headers={"x-viewer-session": file_session}).status_code == 200
    # A file link's passed session on the room link: nothing passed there.
    assert_json_error(page(api, room_token, file_id, file_session), 403, pending("passcode"))
    assert_json_error(api.post(f"/room-views/{room_token}/sessions/{file_session}/passcode",
                               json={"passcode": PASSCODE}), 404, SESSION_GONE)
    # And the reverse: a room link's passed session on the file link.
    room_session = give_passcode(api, room_token, open_session(api, room_token, vault), vault)
    assert page(api, room_token, file_id, room_session).status_code == 200
    assert_json_error(api.get(f"/views/{file_token}/pages/1",
                              headers={"x-viewer-session": room_session}), 403,
                      pending("passcode"))
    # Another room link of the same room and reader: its own sessions only.
    second = gated(api, room, vault, passcode=PASSCODE)
    assert_json_error(page(api, second, file_id, room_session), 403, pending("passcode"))


def test_a_hosted_cookie_is_scoped_to_the_room_link_and_replays_nowhere_else(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, room, vault, passcode=PASSCODE)
    file_id = room["file"]["id"]
    response = httpx.get(f"{vault.url}/r/{token}")
    cookie = response.headers["set-cookie"]
    vault.secrets.append(cookie.split(";")[0].split("=", 1)[1])
    assert f"Path=/r/{token}" in cookie and "SameSite=Strict" in cookie
    assert "httponly" in cookie.lower()
    with hosted(vault, token) as browser:
        # The document's page before the gates: back to the index's gate screens.
        before = browser.get(f"/r/{token}/files/{file_id}")
        assert before.status_code == 303 and before.headers["location"] == f"/r/{token}"
        assert_json_error(browser.get(f"/r/{token}/files/{file_id}/pages/1"), 403,
                          pending("passcode"))
        passed = browser.post(f"/r/{token}/session/passcode", json={"passcode": PASSCODE})
        assert passed.status_code == 200 and passed.json() == {"pending": []}  # id: cookie only
        index = browser.get(f"/r/{token}")
        assert "room-item" in index.text and "Terms.pdf" in index.text
        assert 'id="pages"' in browser.get(f"/r/{token}/files/{file_id}").text
        assert browser.get(f"/r/{token}/files/{file_id}/pages/1").status_code == 200
        session = browser.cookies[COOKIE]
    replay = {"Cookie": f"{COOKIE}={session}"}
    file_token = create_link(api, file_id, policy={"passcode": PASSCODE})["token"]
    vault.secrets.append(file_token)
    assert_json_error(httpx.get(f"{vault.url}/v/{file_token}/pages/1", headers=replay), 403,
                      pending("passcode"))
    assert_json_error(httpx.post(f"{vault.url}/v/{file_token}/session/passcode",
                                 headers=replay, json={"passcode": PASSCODE}), 404,
                      SESSION_GONE)
    second = gated(api, room, vault, passcode=PASSCODE)
    assert_json_error(httpx.get(f"{vault.url}/r/{second}/files/{file_id}/pages/1",
                                headers=replay), 403, pending("passcode"))


def test_a_session_from_before_a_revoke_ends_with_the_room_link(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    file_id = room["file"]["id"]
    token = gated(api, room, vault, passcode=PASSCODE)
    session = give_passcode(api, token, open_session(api, token, vault), vault)
    with hosted(vault, token) as browser:
        browser.post(f"/r/{token}/session/passcode", json={"passcode": PASSCODE})
        assert browser.get(f"/r/{token}/files/{file_id}/pages/1").status_code == 200
        assert page(api, token, file_id, session).status_code == 200
        assert api.delete(f"/room-views/{token}").status_code == 204
        assert_json_error(browser.get(f"/r/{token}/files/{file_id}/pages/1"), 404, LINK_GONE)
        assert browser.get(f"/r/{token}").status_code == 404
        assert_json_error(browser.post(f"/r/{token}/session/passcode",
                                       json={"passcode": PASSCODE}), 404, LINK_GONE)
    assert_json_error(page(api, token, file_id, session), 404, LINK_GONE)
    # Revoking all of a room's links ends theirs the same way.
    other = gated(api, room, vault, passcode=PASSCODE)
    again = give_passcode(api, other, open_session(api, other, vault), vault)
    assert api.post(f"/rooms/{room['id']}/revoke-views").json() == {"revoked": 1}
    assert_json_error(page(api, other, file_id, again), 404, LINK_GONE)


def test_an_acceptance_is_only_the_post_and_comes_after_the_other_gates(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    file_id = room["file"]["id"]
    nda = api.post("/agreements", json={"name": "Room NDA", "text": "Tell no one."}).json()
    token = gated(api, room, vault, passcode=PASSCODE, agreementId=nda["id"])
    session = open_session(api, token, vault)
    base = f"/room-views/{token}/sessions/{session}"
    claimed = api.get(f"/room-views/{token}/files/{file_id}/pages/1",
                      headers={"x-viewer-session": session, "x-agreement-accepted": "1"},
                      params={"accepted": "true"})
    assert_json_error(claimed, 403, pending("passcode", "agreement"))
    assert_json_error(api.post(f"{base}/agreement", json={"name": "Bo Reader"}), 403,
                      pending("passcode"))
    session = give_passcode(api, token, session, vault)
    base = f"/room-views/{token}/sessions/{session}"
    assert_json_error(api.post(f"{base}/agreement", json={"accepted": True}), 400,
                      "name must be the reader's full name, typed (2 to 100 characters)")
    assert_json_error(page(api, token, file_id, session), 403, pending("agreement"))
    accepted = api.post(f"{base}/agreement", json={"name": "Bo Reader"},
                        headers={"x-viewer-user-agent": "RoomTest/1"})
    assert accepted.json()["pending"] == []
    assert page(api, token, file_id, accepted.json()["sessionId"]).status_code == 200
    entry = api.get(f"/rooms/{room['id']}/access-log", params={"action": "agreement"}).json()[0]
    assert entry["roomId"] == room["id"] and "fileId" not in entry
    assert (entry["detail"]["name"], entry["detail"]["version"]) == ("Bo Reader", 1)


def test_max_opens_counts_admitted_sessions_of_a_room_link_with_or_without_gates(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, room, vault, passcode=PASSCODE, maxOpens=2)
    waiting = open_session(api, token, vault)  # opened, not passed: nothing spent
    give_passcode(api, token, open_session(api, token, vault), vault)
    give_passcode(api, token, open_session(api, token, vault), vault)
    assert_json_error(api.post(f"/room-views/{token}/sessions/{waiting}/passcode",
                               json={"passcode": PASSCODE}), 404, LINK_GONE)
    assert_json_error(api.get(f"/room-views/{token}"), 404, LINK_GONE)  # spent: as expired
    assert httpx.get(f"{vault.url}/r/{token}").status_code == 404
    counted = gated(api, room, vault, maxOpens=2)
    assert api.get(f"/room-views/{counted}").status_code == 200  # the owner's details: no open
    assert httpx.get(f"{vault.url}/r/{counted}").status_code == 200  # a browser's session
    open_session(api, counted, vault)  # a proxy's session: the second open
    assert httpx.get(f"{vault.url}/r/{counted}").status_code == 404
    assert_json_error(api.get(f"/room-views/{counted}"), 404, LINK_GONE)
    log = api.get(f"/rooms/{room['id']}/access-log", params={"action": "room.view"}).json()
    assert len(log) == 2  # the refused opening wrote nothing


def test_a_session_ends_when_its_room_link_expires(
        api: httpx.Client, room: dict[str, Any], vault: VaultProcess) -> None:
    file_id = room["file"]["id"]
    token = gated(api, room, vault, passcode=PASSCODE)
    session = give_passcode(api, token, open_session(api, token, vault), vault)
    assert page(api, token, file_id, session).status_code == 200

    async def expire(db: Any) -> None:  # standing in for time: the expiry set back
        await db.room_links.update_one({"hash": digest(token)},
                                       {"$set": {"expiresAt": utcnow() - timedelta(seconds=1)}})

    vault.run_service(expire)
    assert_json_error(page(api, token, file_id, session), 404, LINK_GONE)
    assert_json_error(api.post(f"/room-views/{token}/sessions/{session}/passcode",
                               json={"passcode": PASSCODE}), 404, LINK_GONE)

"""The link gates, attacked as a security review did (docs/security.md, Link gates): reading
pages of a `maxOpens` link without opening it, spending or locking a gated link with its token
alone, fixing a reader's session id before they pass a gate, and learning who and what a link
is for from its gate screens. Over HTTP, against a real vaultd, each answer's status and body
checked. (The rolling limits' own bounds: tests/test_gate_counters_expire.py; every route's
admission: tests/test_gates_every_route.py.)"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.gate_helpers import COOKIE, pending
from tests.http_helpers import LINK_GONE, assert_json_error, create_link, upload_ok
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import VaultProcess
from vaultd.db import GATE_COUNTERS
from vaultd.timefmt import utcnow

PASSCODE = "copper kettle"
OPEN_NEEDED = ("this link counts its opens: pages need a viewer session that opened it "
               "(open the link first)")
WRONG = "passcode is not correct"
REPORT = {"events": [{"page": 1, "seconds": 0.5}]}


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Acquisition memo.pdf")


def gated(api: httpx.Client, file_id: str, vault: VaultProcess, **policy: Any) -> str:
    token: str = create_link(api, file_id, "rita.reader@example.com", viewerName="Rita Reader",
                             policy=policy)["token"]
    vault.secrets.append(token)
    return token


def browser(vault: VaultProcess) -> httpx.Client:
    return httpx.Client(base_url=vault.url, timeout=60)


# --- maxOpens limits pages, not only the link's opening ------------------------------------------

def test_a_max_opens_link_serves_pages_only_to_the_session_that_opened_it(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, pdf_file["id"], vault, maxOpens=1)
    # Before any open, no route serves a page, nor tells that the link is live, nor takes a
    # reading-time report: hosted or API.
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/pages/1"), 403, OPEN_NEEDED)
    assert_json_error(api.get(f"/views/{token}/pages/1"), 403, OPEN_NEEDED)
    assert_json_error(httpx.get(f"{vault.url}/v/{token}/status"), 403, OPEN_NEEDED)
    assert_json_error(httpx.post(f"{vault.url}/v/{token}/activity", json=REPORT), 403,
                      OPEN_NEEDED)
    assert_json_error(api.post(f"/views/{token}/activity", json=REPORT), 403, OPEN_NEEDED)
    with browser(vault) as reader, browser(vault) as second:
        assert reader.get(f"/v/{token}").status_code == 200
        vault.secrets.append(reader.cookies[COOKIE])
        for _ in range(3):  # the one open reads its pages as often as it likes
            assert reader.get(f"/v/{token}/pages/1").status_code == 200
        # A second reader who never opened reads nothing, and cannot open.
        assert_json_error(second.get(f"/v/{token}/pages/1"), 403, OPEN_NEEDED)
        assert_json_error(second.get(f"/v/{token}/status"), 403, OPEN_NEEDED)
        assert_json_error(api.get(f"/views/{token}/pages/2"), 403, OPEN_NEEDED)
        assert second.get(f"/v/{token}").status_code == 404
        assert_json_error(api.post(f"/views/{token}/sessions"), 404, LINK_GONE)


def test_a_max_opens_room_link_serves_documents_only_to_the_sessions_that_opened_it(
        api: httpx.Client, vault: VaultProcess) -> None:
    room = create_room(api, "Project Kestrel")
    file = upload_ok(api, docs.pdf(pages=1), name="Cap table.pdf")
    add_file(api, room["id"], file["id"])
    token: str = room_link(api, room["id"], policy={"maxOpens": 2})["token"]
    vault.secrets.append(token)
    document = f"/r/{token}/files/{file['id']}"
    api_page = f"/room-views/{token}/files/{file['id']}/pages/1"
    with browser(vault) as stranger:
        assert_json_error(stranger.get(f"{document}/pages/1"), 403, OPEN_NEEDED)
        assert_json_error(stranger.get(f"{document}/status"), 403, OPEN_NEEDED)
        assert_json_error(stranger.post(f"{document}/activity", json=REPORT), 403, OPEN_NEEDED)
        refused = stranger.get(document)  # no session: to the index, which counts the open
        assert refused.status_code == 303 and refused.headers["location"] == f"/r/{token}"
    assert_json_error(api.get(api_page), 403, OPEN_NEEDED)
    with browser(vault) as reader, browser(vault) as second:
        assert reader.get(f"/r/{token}").status_code == 200  # a browser's session: one open
        vault.secrets.append(reader.cookies[COOKIE])
        for _ in range(2):  # the document and its pages, as often as it likes
            shown = reader.get(document)
            assert shown.status_code == 200 and "Cap table.pdf" in shown.text
            served = reader.get(f"{document}/pages/1")
            assert served.status_code == 200 and served.content[:2] == b"\xff\xd8"
        opened = api.post(f"/room-views/{token}/sessions")  # a proxy's session: the other open
        assert opened.status_code == 201 and opened.json()["pending"] == []
        session = opened.json()["sessionId"]
        vault.secrets.append(session)
        for _ in range(2):
            assert api.get(api_page, headers={"x-viewer-session": session}).status_code == 200
        # Neither the second browser nor a bare API call opened: they read nothing.
        assert_json_error(second.get(f"{document}/pages/1"), 403, OPEN_NEEDED)
        assert_json_error(api.get(api_page), 403, OPEN_NEEDED)
        # An open beyond the two spends the link, as if expired: no one reads any more.
        for path in (f"/r/{token}", document):
            spent = second.get(path)
            assert spent.status_code == 404 and "Cap table" not in spent.text, path
        assert_json_error(api.post(f"/room-views/{token}/sessions"), 404, LINK_GONE)
        assert_json_error(reader.get(f"{document}/pages/1"), 404, LINK_GONE)


# --- a token alone spends and locks nothing ------------------------------------------------------

def test_a_mail_scanner_opening_a_gated_link_spends_none_of_its_opens(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, pdf_file["id"], vault, passcode=PASSCODE, maxOpens=1)
    room = create_room(api, "Scanned room")
    add_file(api, room["id"], pdf_file["id"])
    room_token: str = room_link(api, room["id"], policy={"passcode": PASSCODE,
                                                         "maxOpens": 1})["token"]
    vault.secrets.append(room_token)
    for base in (f"/v/{token}", f"/r/{room_token}"):
        for _ in range(3):  # a scanner follows the link, cookie-less, more than once
            scanned = httpx.get(vault.url + base)
            assert scanned.status_code == 200 and 'id="passcode-form"' in scanned.text
            vault.secrets.append(scanned.cookies[COOKIE])
    with browser(vault) as reader:
        assert reader.get(f"/v/{token}").status_code == 200
        passed = reader.post(f"/v/{token}/session/passcode", json={"passcode": PASSCODE})
        assert passed.status_code == 200 and passed.json() == {"pending": []}
        assert reader.get(f"/v/{token}/pages/1").status_code == 200
    with browser(vault) as reader:
        assert reader.get(f"/r/{room_token}").status_code == 200
        passed = reader.post(f"/r/{room_token}/session/passcode", json={"passcode": PASSCODE})
        assert passed.status_code == 200 and passed.json() == {"pending": []}
        page = reader.get(f"/r/{room_token}/files/{pdf_file['id']}/pages/1")
        assert page.status_code == 200 and page.content[:2] == b"\xff\xd8"
    # Each link's one open was the reader's: the next reader's passcode meets a spent link.
    for base in (f"/views/{token}", f"/room-views/{room_token}"):
        sid = api.post(f"{base}/sessions").json()["sessionId"]
        vault.secrets.append(sid)
        assert_json_error(api.post(f"{base}/sessions/{sid}/passcode",
                                   json={"passcode": PASSCODE}), 404, LINK_GONE)


def test_a_strangers_wrong_passcodes_do_not_lock_the_reader_out(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, pdf_file["id"], vault, passcode=PASSCODE)
    stranger = {"x-viewer-ip": "198.51.100.66"}
    answers = []
    for _ in range(7):  # five tries per session; the address's 30 an hour
        sid = api.post(f"/views/{token}/sessions", headers=stranger).json()["sessionId"]
        vault.secrets.append(sid)
        for guess in range(5):
            answers.append(api.post(f"/views/{token}/sessions/{sid}/passcode",
                                    json={"passcode": f"guess {guess}"}, headers=stranger))
    assert [a.status_code for a in answers] == [403] * 30 + [429] * 5
    assert_json_error(answers[0], 403, WRONG)
    assert_json_error(answers[-1], 429,
                      "too many passcode tries from this address: try again later")
    # The reader, elsewhere, passes at once: the stranger's tries locked only their address.
    reader = {"x-viewer-ip": "203.0.113.40"}
    sid = api.post(f"/views/{token}/sessions", headers=reader).json()["sessionId"]
    vault.secrets.append(sid)
    passed = api.post(f"/views/{token}/sessions/{sid}/passcode", json={"passcode": PASSCODE},
                      headers=reader)
    assert passed.status_code == 200 and passed.json()["pending"] == []
    vault.secrets.append(passed.json()["sessionId"])


def test_thirty_wrong_passcodes_just_before_the_hour_still_count_after_it(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    """The attack on a window reset on the clock's hour: 30 tries at 21:59:50 and 30 more at
    22:00:05. The 30 tries are made over HTTP, then their times set back, standing in for the
    clock: 59 min 50 s ago (in the previous clock hour unless it is now hh:59:50 or later)
    they still count, a little over an hour ago they no longer do."""
    token = gated(api, pdf_file["id"], vault, passcode=PASSCODE)
    guesser = {"x-viewer-ip": "192.0.2.201"}

    def wrong_try() -> httpx.Response:
        sid = api.post(f"/views/{token}/sessions", headers=guesser).json()["sessionId"]
        vault.secrets.append(sid)
        return api.post(f"/views/{token}/sessions/{sid}/passcode",
                        json={"passcode": "a guess"}, headers=guesser)

    for _ in range(30):
        assert_json_error(wrong_try(), 403, WRONG)

    async def set_back(db: Any, seconds: int) -> int:
        counters = db.raw(GATE_COUNTERS)
        keys = [doc["_id"] async for doc in counters.find(
            {"_id": {"$regex": r"^passcode:.*:192\.0\.2\.201$"}}, {"_id": 1})]
        assert len(keys) == 1, keys
        record = await counters.find_one({"_id": keys[0]})
        hits = [utcnow() - timedelta(seconds=seconds, milliseconds=n)
                for n in range(len(record["hits"]), 0, -1)]
        await counters.update_one({"_id": keys[0]}, {"$set": {"hits": hits}})
        return len(hits)

    assert vault.run_service(lambda db: set_back(db, 3590)) == 30
    assert_json_error(wrong_try(), 429, "too many passcode tries from this address: try again "
                                        "later")
    vault.run_service(lambda db: set_back(db, 3610))
    assert_json_error(wrong_try(), 403, WRONG)  # out of the window: counted, and checked


# --- session fixation --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["file", "room"])
def test_a_planted_cookie_reads_nothing_once_the_victim_passed_the_gates_with_it(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess, kind: str) -> None:
    nda = api.post("/agreements", json={"name": "NDA", "text": "Not a word."}).json()
    policy = {"passcode": PASSCODE, "agreementId": nda["id"]}
    if kind == "file":
        base = f"/v/{gated(api, pdf_file['id'], vault, **policy)}"
        page_url = f"{vault.url}{base}/pages/1"
    else:
        room = create_room(api, "Fixed room")
        add_file(api, room["id"], pdf_file["id"])
        room_token: str = room_link(api, room["id"], policy=policy)["token"]
        vault.secrets.append(room_token)
        base = f"/r/{room_token}"
        page_url = f"{vault.url}{base}/files/{pdf_file['id']}/pages/1"
    planted = httpx.get(vault.url + base).cookies[COOKIE]  # the attacker's session
    vault.secrets.append(planted)
    current, seen = planted, []
    for action, body in (("passcode", {"passcode": PASSCODE}), ("agreement",
                                                                 {"name": "Rita Reader"})):
        # The victim's browser, carrying the planted cookie, passes each gate.
        answer = httpx.post(f"{vault.url}{base}/session/{action}", json=body,
                            headers={"Cookie": f"{COOKIE}={current}"})
        assert answer.status_code == 200 and "sessionId" not in answer.json()
        renewed = answer.cookies[COOKIE]
        assert renewed not in (current, planted)  # a new id at each gate
        vault.secrets.append(renewed)
        seen.append(current)
        current = renewed
    assert httpx.get(page_url, headers={"Cookie": f"{COOKIE}={current}"}).status_code == 200
    for old in seen:  # the planted id, and the one between the gates, read nothing
        replay = {"Cookie": f"{COOKIE}={old}"}
        assert_json_error(httpx.get(page_url, headers=replay), 403,
                          pending("passcode", "agreement"))
        assert_json_error(httpx.post(f"{vault.url}{base}/session/agreement", json={
            "name": "Mallory"}, headers=replay), 404,
            "viewer session not found or ended: open a new one")


def test_an_api_session_id_ends_when_a_gate_is_passed_with_it(
        api: httpx.Client, pdf_file: dict[str, Any], vault: VaultProcess) -> None:
    token = gated(api, pdf_file["id"], vault, passcode=PASSCODE)
    old = api.post(f"/views/{token}/sessions").json()["sessionId"]
    vault.secrets.append(old)
    passed = api.post(f"/views/{token}/sessions/{old}/passcode", json={"passcode": PASSCODE})
    assert passed.status_code == 200
    renewed = passed.json()["sessionId"]
    vault.secrets.append(renewed)
    assert renewed != old
    assert_json_error(api.get(f"/views/{token}/pages/1", headers={"x-viewer-session": old}),
                      403, pending("passcode"))
    assert api.get(f"/views/{token}/pages/1",
                   headers={"x-viewer-session": renewed}).status_code == 200


# --- the gate screens show the brand only --------------------------------------------------------

def test_a_gate_screen_names_neither_the_document_nor_its_reader(
        vault: VaultProcess) -> None:
    """Each screen until the last gate is passed: the first (the passcode's) and the one after
    it (the agreement's, in the session that gave the passcode)."""
    _, key = vault.new_account(name="Harbour Capital")
    with vault.client(key) as owner:
        nda = owner.post("/agreements", json={"name": "NDA", "text": "Not a word."}).json()
        policy = {"passcode": PASSCODE, "agreementId": nda["id"]}
        file = upload_ok(owner, docs.pdf(pages=3), name="Acquisition memo.pdf")
        token = gated(owner, file["id"], vault, **policy)
        room = create_room(owner, "Project Kestrel")
        add_file(owner, room["id"], file["id"])
        room_token = room_link(owner, room["id"], "rita.reader@example.com",
                               viewerName="Rita Reader", policy=policy)["token"]
        vault.secrets.append(room_token)
    for base in (f"/v/{token}", f"/r/{room_token}"):
        with browser(vault) as reader:
            screens = [reader.get(base)]
            vault.secrets.append(reader.cookies[COOKIE])
            passed = reader.post(f"{base}/session/passcode", json={"passcode": PASSCODE})
            assert passed.status_code == 200 and passed.json() == {"pending": ["agreement"]}
            vault.secrets.append(reader.cookies[COOKIE])
            screens.append(reader.get(base))
        for screen, form in zip(screens, ("passcode-form", "agreement-form"), strict=True):
            assert screen.status_code == 200 and f'id="{form}"' in screen.text, (base, form)
            assert "Harbour Capital" in screen.text
            for secret in ("Acquisition", "Kestrel", "Rita", "rita.reader", "r***@", "3 pages"):
                assert secret not in screen.text, (base, form, secret)

"""Email codes on room links, against a real SMTP server on loopback (aiosmtpd): the same
codes, limits and messages as a file link's (`services.gates.email_codes`), and a code from a file
link's session verifies nothing on a room link."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.mail_server import MailServer, code_in
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import VaultProcess, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

VIEWER = {"x-viewer-ip": "192.0.2.44"}
PENDING_EMAIL = "gates still pending: verifyEmail (pass them in a viewer session)"


@pytest.fixture(scope="module")
def mailing_vault(tmp_path_factory: pytest.TempPathFactory,
                  mail: MailServer) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("room-codes") / "data", **mail.env()) as server:
        yield server


@pytest.fixture
def api(mailing_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = mailing_vault.new_account(name="Northwind Legal", plan="pro")
    with mailing_vault.client(key) as client:
        yield client


def session_of(api: httpx.Client, base: str, vault: VaultProcess) -> str:
    body = api.post(f"{base}/sessions", headers=VIEWER).json()
    assert body["pending"] == ["verifyEmail"]
    vault.secrets.append(body["sessionId"])
    session: str = body["sessionId"]
    return session


def send_code(api: httpx.Client, base: str, session: str, mail: MailServer,
              vault: VaultProcess) -> tuple[str, str]:
    """(The code from the delivered mail, the session's new id: the old one has ended.)"""
    before = mail.inbox.count()
    response = api.post(f"{base}/sessions/{session}/code", headers=VIEWER)
    assert response.status_code == 202, response.text
    body = response.json()
    renewed: str = body.pop("sessionId")
    vault.secrets.append(renewed)
    assert body == {"sentTo": "a***@example.com", "expiresInSeconds": 600,
                    "resendInSeconds": 30}
    return code_in(mail.inbox.wait_for(before + 1)), renewed


def test_room_link_codes_are_guessed_five_times_at_most_and_cross_no_link(
        api: httpx.Client, mail: MailServer, mailing_vault: VaultProcess) -> None:
    room = create_room(api, "Board pack")
    file = upload_ok(api, docs.pdf(pages=1), name="Minutes.pdf")
    add_file(api, room["id"], file["id"])
    token = room_link(api, room["id"], "ann.reader@example.com",
                      policy={"verifyEmail": True})["token"]
    file_token = create_link(api, file["id"], "ann.reader@example.com",
                             policy={"verifyEmail": True})["token"]
    mailing_vault.secrets += [token, file_token]
    base = f"/room-views/{token}"
    page = f"{base}/files/{file['id']}/pages/1"
    # A code mailed for the file link's session verifies nothing on the room link.
    file_session = session_of(api, f"/views/{file_token}", mailing_vault)
    file_code, file_session = send_code(api, f"/views/{file_token}", file_session, mail,
                                        mailing_vault)
    assert_json_error(api.post(f"{base}/sessions/{file_session}/verify",
                               json={"code": file_code}), 404,
                      "viewer session not found or ended: open a new one")
    session = session_of(api, base, mailing_vault)
    assert_json_error(api.post(f"{base}/sessions/{session}/verify", json={"code": file_code}),
                      400, "no code was sent in this session: ask for one")
    code, session = send_code(api, base, session, mail, mailing_vault)
    verify = f"{base}/sessions/{session}/verify"
    for step in range(1, 6):
        guess = f"{(int(code) + step) % 1_000_000:06d}"
        assert_json_error(api.post(verify, json={"code": guess}), 403, "code is not correct")
    assert_json_error(api.post(verify, json={"code": code}), 429,
                      "too many wrong codes: ask for a new one")
    assert_json_error(api.get(page, headers={"x-viewer-session": session}), 403, PENDING_EMAIL)
    # A new session and its own code: verified, the pages are served.
    again = session_of(api, base, mailing_vault)
    fresh, again = send_code(api, base, again, mail, mailing_vault)
    verified = api.post(f"{base}/sessions/{again}/verify", json={"code": fresh}).json()
    assert verified["pending"] == []
    served = api.get(page, headers={"x-viewer-session": verified["sessionId"]})
    assert served.status_code == 200 and served.headers["content-type"] == "image/jpeg"
    steps = [e["detail"]["step"] for e in
             api.get(f"/rooms/{room['id']}/access-log", params={"action": "verify"}).json()]
    assert steps[:3] == ["verified", "code-sent", "wrong-code"] and steps.count("code-sent") == 2

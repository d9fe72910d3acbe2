"""Email codes on room links, against a real SMTP server on loopback (aiosmtpd): the same
codes, limits and messages as a file link's (`services.gates.email_codes`), and a code from a file
link's session verifies nothing on a room link."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests import documents as docs
from tests import mail_server
from tests.gate_helpers import email_session, send_code
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.mail_server import MailServer
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

mailing_vault = mail_server.mailing_vault  # this module's fixture

VIEWER = {"x-viewer-ip": "192.0.2.44"}
PENDING_EMAIL = "gates still pending: verifyEmail (pass them in a viewer session)"


@pytest.fixture
def api(mailing_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = mailing_vault.new_account(name="Northwind Legal", plan="pro")
    with mailing_vault.client(key) as client:
        yield client


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
    file_session = email_session(api, f"/views/{file_token}", mailing_vault, VIEWER)
    file_code, file_session = send_code(api, f"/views/{file_token}", file_session, mail,
                                        mailing_vault, VIEWER)
    assert_json_error(api.post(f"{base}/sessions/{file_session}/verify",
                               json={"code": file_code}), 404,
                      "viewer session not found or ended: open a new one")
    session = email_session(api, base, mailing_vault, VIEWER)
    assert_json_error(api.post(f"{base}/sessions/{session}/verify", json={"code": file_code}),
                      400, "no code was sent in this session: ask for one")
    code, session = send_code(api, base, session, mail, mailing_vault, VIEWER)
    verify = f"{base}/sessions/{session}/verify"
    for step in range(1, 6):
        guess = f"{(int(code) + step) % 1_000_000:06d}"
        assert_json_error(api.post(verify, json={"code": guess}), 403, "code is not correct")
    assert_json_error(api.post(verify, json={"code": code}), 429,
                      "too many wrong codes: ask for a new one")
    assert_json_error(api.get(page, headers={"x-viewer-session": session}), 403, PENDING_EMAIL)
    # A new session and its own code: verified, the pages are served.
    again = email_session(api, base, mailing_vault, VIEWER)
    fresh, again = send_code(api, base, again, mail, mailing_vault, VIEWER)
    verified = api.post(f"{base}/sessions/{again}/verify", json={"code": fresh}).json()
    assert verified["pending"] == []
    served = api.get(page, headers={"x-viewer-session": verified["sessionId"]})
    assert served.status_code == 200 and served.headers["content-type"] == "image/jpeg"
    steps = [e["detail"]["step"] for e in
             api.get(f"/rooms/{room['id']}/access-log", params={"action": "verify"}).json()]
    assert steps[:3] == ["verified", "code-sent", "wrong-code"] and steps.count("code-sent") == 2

"""A gated room link in headless Chromium, with the file links' gates: the room index shows
the file viewer's gate screens; the reader reads the code from the mail delivered to a real SMTP
server (aiosmtpd), gives the passcode, and only then sees the numbered index and a document's
pages. The session cookie is the room link's own: the same browser on another room link of the
same room meets its gates again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import browser_session, mail_server
from tests import documents as docs
from tests.browser_session import WAIT_MS, open_viewer
from tests.http_helpers import upload_ok
from tests.mail_server import MailServer, code_in
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess

playwright_api = pytest.importorskip("playwright.sync_api")

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts Chromium and its own servers

browser = browser_session.browser  # this module's fixture
mailing_vault = mail_server.mailing_vault  # this module's fixture


@pytest.fixture(scope="module")
def owner(mailing_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = mailing_vault.new_account(name="Northwind Legal", plan="pro")
    with mailing_vault.client(key) as client:
        yield client


def test_a_reader_passes_a_gated_rooms_gates_then_reads_its_documents(
        browser: Browser, owner: httpx.Client, mail: MailServer,
        mailing_vault: VaultProcess) -> None:
    room = create_room(owner, "Series B data room")
    legal = add_folder(owner, room["id"], "Legal")
    file = upload_ok(owner, docs.pdf(pages=2), name="Term sheet.pdf")
    add_file(owner, room["id"], file["id"], folder=legal["id"])
    link = room_link(owner, room["id"], "ann.lee@example.com", viewerName="Ann Lee",
                     policy={"verifyEmail": True, "passcode": "harbour 42"})
    other = room_link(owner, room["id"], "ann.lee@example.com", policy={"passcode": "quay 9"})
    mailing_vault.secrets += [link["token"], other["token"]]
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        assert viewer.status == 200
        shown = page.locator("body").inner_text() + page.title()
        assert "Northwind Legal" in shown  # the brand, and nothing of the link before its gates
        assert not any(word in shown for word in ("Series B", "Ann", "ann.lee", "a***@"))
        assert page.locator(".room-item").count() == 0  # no index before the gates
        cookie = next(c for c in page.context.cookies() if c["name"] == "vaultd_session")
        assert cookie["path"] == f"/r/{link['token']}" and cookie["httpOnly"]
        assert cookie["sameSite"] == "Strict"
        # The document's own URL, before the gates: back to the gate screens, no page.
        page.goto(f"{link['url']}/files/{file['id']}")
        page.wait_for_selector("#send-code", timeout=WAIT_MS)
        before = mail.inbox.count()
        page.locator("#send-code").click()
        code = code_in(mail.inbox.wait_for(before + 1))
        page.wait_for_selector("#code-input:focus", timeout=WAIT_MS)
        page.keyboard.type(code)
        page.keyboard.press("Enter")
        page.wait_for_selector("#passcode-input:focus", timeout=WAIT_MS)
        page.keyboard.type("harbour 42")
        page.keyboard.press("Enter")
        page.wait_for_selector(".room-item", timeout=WAIT_MS)
        assert page.locator(".room-item .room-number").all_inner_texts() == ["1", "1.1"]
        page.click("text=Term sheet.pdf")
        page.wait_for_url(f"**/r/*/files/{file['id']}", timeout=WAIT_MS)
        viewer.loaded(1)
        assert page.evaluate("window.__cspViolations") == []
        assert viewer.errors == []
        assert not any(r.url.endswith("/pages/1") and "/r/" not in r.url
                       for r in viewer.requests)
        viewer.shoot("room-gates-opened")
        # The same browser on another link of the room: that link's gates, its own session.
        page.goto(other["url"])
        page.wait_for_selector("#passcode-input", timeout=WAIT_MS)
        assert page.locator(".room-item").count() == 0
    steps = [e["detail"]["step"] for e in
             owner.get(f"/rooms/{room['id']}/access-log", params={"action": "verify"}).json()]
    assert steps == ["passcode", "verified", "code-sent"]

"""The gate screens in headless Chromium, end to end: the reader asks for a code, reads it from
the mail delivered to a real SMTP server (aiosmtpd on loopback), types a wrong one and sees why,
types the right one, gives the passcode, accepts the agreement with a typed name, and reads the
document. Keyboard only, with the roles a screen reader announces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests import browser_session, mail_server
from tests import documents as docs
from tests.browser_session import WAIT_MS, open_viewer
from tests.http_helpers import create_link, upload_ok
from tests.mail_server import MailServer, code_in
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts Chromium and its own servers

browser = browser_session.browser  # this module's fixture
mailing_vault = mail_server.mailing_vault  # this module's fixture


@pytest.fixture(scope="module")
def owner(mailing_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = mailing_vault.new_account(name="Northwind Legal")
    with mailing_vault.client(key) as client:
        yield client


def message_text(viewer: Any) -> str:
    text: str = viewer.page.locator("#gate-message").inner_text()
    return text


def test_a_reader_passes_every_gate_with_the_keyboard_and_reads_the_document(
        browser: Browser, owner: httpx.Client, mail: MailServer,
        mailing_vault: VaultProcess) -> None:
    file = upload_ok(owner, docs.pdf(pages=2), name="Merger terms.pdf")
    nda = owner.post("/agreements", json={"name": "Mutual NDA",
                                          "text": "The reader keeps the terms secret."}).json()
    link = create_link(owner, file["id"], "ann.lee@example.com", viewerName="Ann Lee",
                       policy={"verifyEmail": True, "passcode": "harbour 42",
                               "agreementId": nda["id"]})
    mailing_vault.secrets.append(link["token"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        assert viewer.status == 200
        shown = page.locator("body").inner_text() + page.title()
        assert "Northwind Legal" in shown  # the brand, and nothing of the link before its gates
        assert not any(word in shown for word in ("Merger", "Ann", "ann.lee", "a***@"))
        assert page.evaluate("document.activeElement.id") == "send-code"
        before = mail.inbox.count()
        page.keyboard.press("Enter")
        code = code_in(mail.inbox.wait_for(before + 1))
        page.wait_for_selector("#code-input:focus", timeout=WAIT_MS)
        assert "new code in" in page.locator("#resend-status").inner_text()
        assert page.locator("#resend-code").is_disabled()
        wrong = f"{(int(code) + 1) % 1_000_000:06d}"
        page.keyboard.type(wrong)
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.getElementById('gate-message').textContent !== ''",
                               timeout=WAIT_MS)
        assert message_text(viewer) == "That code is not correct. Check the email and try again."
        assert page.locator("#gate-message").get_attribute("role") == "alert"
        page.keyboard.type(code)  # the wrong one is selected: typing replaces it
        page.keyboard.press("Enter")
        page.wait_for_selector("#passcode-input:focus", timeout=WAIT_MS)
        page.keyboard.type("harbour 42")
        page.keyboard.press("Enter")
        page.wait_for_selector("#agreement-text", timeout=WAIT_MS)
        assert "keeps the terms secret" in page.locator("#agreement-text").inner_text()
        page.locator("#name-input").focus()
        page.keyboard.type("Ann Lee")
        page.keyboard.press("Enter")
        viewer.loaded(1)
        # The wrong code's 403 is the only failed request Chromium reports.
        assert viewer.errors == [
            "Failed to load resource: the server responded with a status of 403 (Forbidden)"]
        assert page.evaluate("window.__cspViolations") == []
        viewer.shoot("gates-opened")
    steps = [e["detail"].get("step") for e in
             owner.get(f"/files/{file['id']}/access-log?action=verify").json()]
    assert steps == ["passcode", "verified", "wrong-code", "code-sent"]


def test_a_reader_without_the_mailbox_never_sees_a_page(
        browser: Browser, owner: httpx.Client, mailing_vault: VaultProcess) -> None:
    file = upload_ok(owner, docs.pdf(pages=1), name="Forwarded.pdf")
    link = create_link(owner, file["id"], "ann.lee@example.com", policy={"verifyEmail": True})
    mailing_vault.secrets.append(link["token"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        page.locator("#send-code").click()
        page.wait_for_selector("#code-input", timeout=WAIT_MS)
        statuses = []
        for guess in ("000000", "111111", "222222", "333333", "444444", "555555"):
            page.locator("#code-input").fill(guess)
            with page.expect_response(lambda r: r.url.endswith("/session/verify")) as answer:
                page.locator("#code-input").press("Enter")
            statuses.append(answer.value.status)
        # One of the six may be the code by chance (odds 6 in a million): it would say 200.
        assert statuses[:5] == [403] * 5 or 200 in statuses
        page.wait_for_function("() => document.getElementById('gate-message').textContent"
                               ".startsWith('Too many')", timeout=WAIT_MS)
        assert message_text(viewer) == "Too many wrong codes. Send a new code and use that one."
        assert not any("/pages/" in request.url for request in viewer.requests)
        viewer.shoot("gates-code")


def test_a_link_revoked_while_its_gate_is_open_says_so(
        browser: Browser, owner: httpx.Client, mailing_vault: VaultProcess) -> None:
    file = upload_ok(owner, docs.pdf(pages=1), name="Withdrawn.pdf")
    link = create_link(owner, file["id"], "ann.lee@example.com", policy={"passcode": "tide 7"})
    mailing_vault.secrets.append(link["token"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        page.wait_for_selector("#passcode-input:focus", timeout=WAIT_MS)
        assert owner.delete(f"/views/{link['token']}").status_code == 204
        page.keyboard.type("tide 7")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.getElementById('gate-message').textContent"
                               ".startsWith('This link')", timeout=WAIT_MS)
        assert message_text(viewer) == ("This link is no longer available. Ask the person who "
                                         "shared it for a new one.")


def test_the_viewer_reports_time_and_polls_its_status_once_the_gates_are_passed(
        browser: Browser, owner: httpx.Client, mailing_vault: VaultProcess) -> None:
    file = upload_ok(owner, docs.pdf(pages=1), name="Timed.pdf")
    link = create_link(owner, file["id"], "ann.lee@example.com", policy={"passcode": "tide 8"})
    mailing_vault.secrets.append(link["token"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        page.bring_to_front()  # viewer-activity.js counts only while the page has the focus
        page.wait_for_selector("#passcode-input:focus", timeout=WAIT_MS)
        page.keyboard.type("tide 8")
        page.keyboard.press("Enter")
        viewer.loaded(1)
        # The viewer's own requests carry the session cookie (a 403 would be a console error).
        with page.expect_response(lambda r: r.url.endswith("/status"),
                                  timeout=WAIT_MS) as polled:
            page.evaluate("window.dispatchEvent(new Event('focus'))")  # polls on focus
        assert polled.value.status == 200
        with page.expect_response(lambda r: r.url.endswith("/activity"),
                                  timeout=WAIT_MS) as reported:
            pass  # flushed every 10 s
        assert reported.value.status == 200
        assert viewer.errors == []
    seconds = owner.get(f"/views/{link['token']}/analytics").json()["totalSeconds"]
    assert seconds > 0

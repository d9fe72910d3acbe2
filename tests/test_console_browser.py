"""The console in headless Chromium, as people use it, finding controls by the names a screen
reader announces: a member signs in with a mailed code (the real SMTP server), uploads a PDF,
shares it with a passcode and copies the link; the link opens in the hosted viewer behind its
passcode gate; the member sees the open in the Links table and the access log, revokes, and the
viewer's next page is refused. Then: the same by keyboard alone, an auditor who sees and cannot
change, a file named to run a script that runs none, and axe-core on every page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests import documents as docs
from tests.browser_session import WAIT_MS, chromium_browser, open_viewer
from tests.console_auth import console_vault
from tests.console_browser import (
    ConsoleTab,
    add_member,
    assert_accessible,
    assert_no_dialog,
    console_tab,
    new_account,
    press_on,
    signed_in_tab,
    tab_to,
    type_into,
)
from tests.http_helpers import upload_ok
from tests.mail_server import MailServer, code_in
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts Chromium and its own servers

INJECTED_NAME = "<img src=x onerror=alert(1)>.pdf"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("console-browser") / "data", mail) as server:
        yield server


@pytest.fixture(scope="module")
def team(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account(name="Harbour Legal")


@pytest.fixture(scope="module")
def browser(team: tuple[str, str]) -> Iterator[Browser]:  # the account first: see chromium_browser
    with chromium_browser() as launched:
        yield launched


def sign_in_by_code(page: Page, vault: VaultProcess, mail: MailServer, email: str) -> None:
    page.goto(f"{vault.url}/console")
    assert page.url.endswith("/console/sign-in")
    assert_accessible(page)
    page.get_by_label("Email").fill(email)
    before = mail.inbox.count()
    page.get_by_role("button", name="Send code").click()
    code = code_in(mail.inbox.wait_for(before + 1))
    page.get_by_label("Code").fill(code)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Files").wait_for(timeout=WAIT_MS)


def upload_through_the_page(page: Page, name: str) -> None:
    page.get_by_label("Upload files").set_input_files(
        [{"name": name, "mimeType": "application/pdf", "buffer": docs.pdf(pages=2)}])
    page.get_by_role("link", name=f"Open {name}").click()
    page.get_by_role("heading", name=name).wait_for(timeout=WAIT_MS)


def new_link_url(page: Page) -> str:
    field = page.get_by_role("textbox", name="Link")
    assert field.is_editable() is False
    url: str = field.input_value()
    return url


def test_a_member_shares_a_file_watches_the_open_and_revokes(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    email = "mara@harbour.example"
    add_member(vault, team[0], email, "member")
    with console_tab(browser) as tab:
        page = tab.page
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=vault.url)
        sign_in_by_code(page, vault, mail, email)
        upload_through_the_page(page, "Q3 report.pdf")
        file_url = page.url
        page.get_by_role("button", name="Share").click()
        page.get_by_label("Viewer email").fill("ann@client.example")
        page.get_by_label("Viewer name").fill("Ann Lee")
        page.get_by_label("Passcode").fill("harbour 42")
        assert page.get_by_label("Expires after (days)").input_value() == "7"
        page.get_by_role("button", name="Create link").click()
        url = new_link_url(page)
        vault.secrets.append(url.rsplit("/", 1)[1])
        page.get_by_role("button", name="Copy link").click()
        page.get_by_text("Copied to the clipboard.").wait_for(timeout=WAIT_MS)
        assert page.evaluate("() => navigator.clipboard.readText()") == url

        with open_viewer(browser, url) as viewer:
            viewer.page.get_by_role("textbox", name="Passcode").fill("harbour 42")
            viewer.page.get_by_role("button", name="Continue").click()
            viewer.loaded(1)
            page.goto(file_url)  # the file's page again: the open is listed
            row = page.get_by_role("table", name="Links").get_by_role("row").filter(
                has_text="ann@client.example")
            assert "active" in row.inner_text() and "yes" in row.inner_text()
            log = page.get_by_role("table", name="Access log")
            assert log.get_by_role("row").filter(has_text="ann@client.example").count() >= 1
            row.get_by_role("button", name="Revoke").click()
            page.get_by_text("The link was revoked").wait_for(timeout=WAIT_MS)
            token = url.rsplit("/", 1)[1]
            refused = viewer.page.evaluate(
                "async (token) => (await fetch(`/v/${token}/pages/2`)).status", token)
            assert refused == 404
        assert tab.errors == [] and tab.csp_violations() == []


def test_sign_in_upload_and_share_work_with_the_keyboard_alone(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    email = "kit@harbour.example"
    add_member(vault, team[0], email, "member")
    with console_tab(browser) as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/sign-in")
        type_into(page, page.get_by_label("Email"), email)
        before = mail.inbox.count()
        press_on(page, page.get_by_role("button", name="Send code"))
        code = code_in(mail.inbox.wait_for(before + 1))
        page.get_by_label("Code").wait_for(timeout=WAIT_MS)
        type_into(page, page.get_by_label("Code"), code)
        page.keyboard.press("Enter")
        page.get_by_role("heading", name="Files").wait_for(timeout=WAIT_MS)

        # Playwright asks the browser to intercept the file chooser without waiting for the
        # answer (the event's subscription is sent and forgotten): waiting from before the Tab
        # presses, whose round trips follow it, the Space cannot reach the control before the
        # interception does (a chooser not intercepted is the browser's own, never seen here).
        with page.expect_file_chooser() as chooser:
            tab_to(page, page.get_by_label("Upload files"))
            page.keyboard.press("Space")
        chooser.value.set_files([{"name": "Keys.pdf", "mimeType": "application/pdf",
                                  "buffer": docs.pdf(pages=1)}])
        opened = page.get_by_role("link", name="Open Keys.pdf")
        opened.wait_for(timeout=WAIT_MS)
        press_on(page, opened)
        page.get_by_role("heading", name="Keys.pdf").wait_for(timeout=WAIT_MS)

        press_on(page, page.get_by_role("button", name="Share"))
        assert page.evaluate("() => document.activeElement.id") == "viewer-email"
        page.keyboard.type("lee@client.example")
        type_into(page, page.get_by_label("Passcode"), "tide 77")
        press_on(page, page.get_by_role("button", name="Create link"))
        assert "/v/" in new_link_url(page)
        assert tab.errors == []


def test_an_auditor_sees_the_files_and_no_control_that_changes_them(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    with vault.client(team[1]) as api:
        upload_ok(api, docs.pdf(pages=1), name="Audited.pdf")
    with signed_in_tab(browser, vault, mail, team[0], "ivy@harbour.example", "auditor") as tab:
        page = tab.page
        assert page.get_by_role("heading", name="Files").is_visible()
        assert page.get_by_label("Upload files").count() == 0
        page.get_by_role("link", name="Audited.pdf").click()
        page.get_by_role("heading", name="Access log").wait_for(timeout=WAIT_MS)
        assert page.get_by_role("button", name="Share").count() == 0
        assert page.get_by_role("button", name="Create link").count() == 0
        assert page.get_by_role("button", name="Preview").is_visible()
        assert_accessible(page)


def test_a_file_named_to_run_a_script_shows_its_name_as_text(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    with vault.client(team[1]) as api:
        file_id = upload_ok(api, docs.pdf(pages=1), name=INJECTED_NAME)["id"]
    with signed_in_tab(browser, vault, mail, team[0], "rae@harbour.example") as tab:
        page = tab.page
        assert page.get_by_role("link", name=INJECTED_NAME).is_visible()
        page.goto(f"{vault.url}/console/files/{file_id}")
        assert page.get_by_role("heading", name=INJECTED_NAME).inner_text() == INJECTED_NAME
        page.goto(f"{vault.url}/console/files/{file_id}/delete")
        assert INJECTED_NAME in page.get_by_role("heading", level=1).inner_text()
        assert page.locator("img").count() == 0
        assert_no_dialog(tab)
        assert tab.errors == [] and tab.csp_violations() == []


def every_page(tab: ConsoleTab, vault: VaultProcess, file_id: str) -> list[str]:
    return [f"{vault.url}/console/files", f"{vault.url}/console/files/{file_id}",
            f"{vault.url}/console/files/{file_id}/delete",
            f"{vault.url}/console/files/{file_id}/revoke-all",
            f"{vault.url}/console/files/00000000-0000-4000-8000-000000000000"]


def test_axe_finds_nothing_serious_on_any_page(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    second, _ = new_account(vault, "Second Co")
    add_member(vault, second, "lou@harbour.example", "auditor")
    with vault.client(team[1]) as api:
        file_id = upload_ok(api, docs.pdf(pages=3), name="Checked.pdf")["id"]
        api.post("/views", json={"fileId": file_id, "viewerEmail": "a@b.example",
                                 "policy": {"passcode": "four"}})
    with console_tab(browser) as anonymous:
        anonymous.page.goto(f"{vault.url}/console/sign-in")
        assert_accessible(anonymous.page)
    with signed_in_tab(browser, vault, mail, team[0], "lou@harbour.example") as tab:
        page = tab.page
        assert page.url.endswith("/console/account")  # in two accounts: the chooser
        assert_accessible(page)
        page.get_by_role("button", name="Harbour Legal").click()
        page.get_by_role("heading", name="Files").wait_for(timeout=WAIT_MS)
        for url in every_page(tab, vault, file_id):
            page.goto(url)
            assert_accessible(page)
        page.goto(f"{vault.url}/console/files/{file_id}")
        page.get_by_role("button", name="Share").click()
        page.get_by_label("Viewer email").fill("x@y.example")
        page.get_by_role("button", name="Create link").click()
        page.get_by_role("textbox", name="Link").wait_for(timeout=WAIT_MS)
        assert_accessible(page)
        assert tab.csp_violations() == []


def test_an_upload_the_api_refuses_is_explained_in_words(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    with signed_in_tab(browser, vault, mail, team[0], "sol@harbour.example", "member") as tab:
        page = tab.page
        page.get_by_label("Upload files").set_input_files(
            [{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not a document"},
             {"name": "Fine.pdf", "mimeType": "application/pdf", "buffer": docs.pdf(pages=1)}])
        page.get_by_role("link", name="Open Fine.pdf").wait_for(timeout=WAIT_MS)
        refused = page.get_by_role("listitem").filter(has_text="notes.txt")
        assert "Not uploaded: wrong type (PDF, JPEG or PNG" in refused.inner_text()
        assert page.get_by_role("progressbar", name="Uploading Fine.pdf").get_attribute(
            "value") == "100"
        assert_accessible(page)


DROP_FILE = """(bytes) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([new Uint8Array(bytes)], "Dropped.pdf", {type: "application/pdf"}));
    return transfer;
}"""


def test_a_file_dropped_on_the_upload_box_is_uploaded(
        browser: Browser, vault: VaultProcess, mail: MailServer, team: tuple[str, str]) -> None:
    with signed_in_tab(browser, vault, mail, team[0], "dee@harbour.example", "member") as tab:
        page = tab.page
        transfer = page.evaluate_handle(DROP_FILE, list(docs.pdf(pages=1)))
        page.dispatch_event("#drop", "dragover", {"dataTransfer": transfer})
        page.dispatch_event("#drop", "drop", {"dataTransfer": transfer})
        page.get_by_role("link", name="Open Dropped.pdf").click()
        page.get_by_role("heading", name="Dropped.pdf").wait_for(timeout=WAIT_MS)
        assert tab.errors == []

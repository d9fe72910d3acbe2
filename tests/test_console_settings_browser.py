"""The console's Settings page in Chromium, through a real vaultd and its SMTP server: an admin
makes an API key that works on /v1/account and stops working once revoked there (found by the
names a screen reader announces); an admin invites a member with the keyboard alone, under a
name that carries script, shown as text; an auditor sees members and keys and no control to
change them; an admin adds a webhook endpoint and sends it a test event that a real receiver
verifies and the delivery log then shows; an admin of a Pro account sets the branding that a
viewer then sees in the hosted viewer, and a Free account's admin reads why there is no form.
axe-core finds nothing serious on each page. The
server's refusals, without the browser: tests/test_console_settings.py and
tests/test_webhook_test_event.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests import documents as docs
from tests.browser_session import chromium_browser
from tests.console_auth import console_vault
from tests.console_browser import (
    assert_accessible,
    assert_no_dialog,
    console_tab,
    new_account,
    off_the_loop,
    press_on,
    signed_in_cookie,
    signed_in_tab,
    type_into,
)
from tests.http_helpers import create_link, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from tests.webhook_receiver import running_receiver

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts its own vaultd, SMTP and Chromium

SCRIPT_NAME = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("settings") / "data", mail,
                       VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS="true",
                       VAULTD_WEBHOOKS_POLL_SECONDS="0.1") as server:
        yield server


@pytest.fixture(scope="module")
def account(vault: VaultProcess) -> str:
    account_id, _ = vault.new_account(name="Harbour Legal")
    return account_id


@pytest.fixture(scope="module")
def cookies(vault: VaultProcess, mail: MailServer, account: str) -> dict[str, str]:
    """Made before Chromium starts (its event loop holds the thread: see chromium_browser)."""
    return {role: signed_in_cookie(vault, mail, account, f"{role}@harbour.example", role)
            for role in ("admin", "auditor")}


@pytest.fixture(scope="module")
def chromium(cookies: dict[str, str]) -> Iterator[Browser]:
    with chromium_browser() as browser_:
        yield browser_


def test_an_admin_makes_a_key_that_works_until_revoked_in_settings(
        chromium: Browser, vault: VaultProcess, cookies: dict[str, str]) -> None:
    with console_tab(chromium, cookie=cookies["admin"], url=vault.url) as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/settings")
        assert page.get_by_role("heading", name="Settings", exact=True).is_visible()
        assert_accessible(page)
        page.get_by_role("textbox", name="Key name", exact=True).fill("CI deploys")
        page.get_by_role("button", name="Create key", exact=True).click()
        key = page.get_by_role("textbox", name="New key", exact=True).input_value()
        vault.secrets.append(key)
        assert key.startswith("sd_live_")
        assert_accessible(page)
        with vault.client(key) as api:
            assert api.get("/account").json()["name"] == "Harbour Legal"
        page.goto(f"{vault.url}/console/settings")
        assert page.get_by_role("textbox", name="New key").count() == 0  # shown once only
        row = page.get_by_role("row").filter(has_text="CI deploys")
        row.get_by_role("button", name="Revoke", exact=True).click()
        assert page.get_by_role("status").filter(has_text="The key was revoked").is_visible()
        assert "revoked" in row.inner_text()
        with vault.client(key) as api:
            assert api.get("/account").status_code == 401
        assert_no_dialog(tab)
        assert tab.csp_violations() == []


def test_an_admin_invites_a_member_with_the_keyboard_alone(
        chromium: Browser, vault: VaultProcess, cookies: dict[str, str]) -> None:
    with console_tab(chromium, cookie=cookies["admin"], url=vault.url) as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/settings")
        type_into(page, page.get_by_role("textbox", name="Email", exact=True),
                  "new.hire@harbour.example")
        type_into(page, page.get_by_role("textbox", name="Name", exact=True), SCRIPT_NAME)
        role = page.get_by_role("combobox", name="Role", exact=True)
        role.select_option("auditor")
        press_on(page, page.get_by_role("button", name="Invite member", exact=True))
        page.wait_for_url(re.compile(r".*/console/settings\?done=member-invited$"))
        row = page.get_by_role("row").filter(has_text="new.hire@harbour.example")
        assert SCRIPT_NAME in row.inner_text()  # shown as text, never run
        assert "auditor" in row.inner_text()
        assert_accessible(page)
        assert_no_dialog(tab)


def test_an_auditor_sees_members_and_keys_without_a_control_to_change_them(
        chromium: Browser, vault: VaultProcess, cookies: dict[str, str]) -> None:
    with console_tab(chromium, cookie=cookies["auditor"], url=vault.url) as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/settings")
        assert page.get_by_role("heading", name="API keys").is_visible()
        people = page.get_by_role("table", name="Members", exact=True)
        assert people.get_by_role("row").filter(has_text="admin@harbour.example").count() == 1
        assert page.get_by_role("table", name="API keys", exact=True).is_visible()
        for name in ("Create key", "Invite member", "Revoke"):
            assert page.get_by_role("button", name=name, exact=True).count() == 0
        assert_accessible(page)


def test_an_admin_sends_a_test_event_that_the_receiver_verifies(
        chromium: Browser, vault: VaultProcess, cookies: dict[str, str]) -> None:
    with running_receiver() as receiver, \
            console_tab(chromium, cookie=cookies["admin"], url=vault.url) as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/settings")
        page.get_by_role("textbox", name="Endpoint URL", exact=True).fill(receiver.url)
        page.get_by_role("button", name="Add endpoint", exact=True).click()
        secret = page.get_by_role("textbox", name="Signing secret", exact=True).input_value()
        vault.secrets.append(secret)
        receiver.secret = secret
        page.goto(f"{vault.url}/console/settings")
        log = page.get_by_role("table", name=f"Delivery log of {receiver.url}", exact=True)
        assert "No delivery yet." in log.inner_text()
        page.get_by_role("button", name=f"Send test event to {receiver.url}", exact=True).click()
        assert page.get_by_role("status").filter(has_text="A test event was queued").is_visible()
        got = receiver.wait_for(lambda seen: len(seen) >= 1)
        assert got[0].verified and got[0].event["type"] == "webhook.test"

        def delivered() -> bool:
            page.reload()
            return "webhook.test" in log.inner_text() and "delivered" in log.inner_text()
        wait_until(delivered, timeout=20, what="the test event in the delivery log")
        assert_accessible(page)
        assert_no_dialog(tab)
        assert tab.csp_violations() == []


def a_link(vault: VaultProcess, key: str) -> str:
    def make() -> str:
        with vault.client(key) as api:
            token: str = create_link(api, upload_ok(api, docs.pdf(1))["id"])["token"]
        return token
    return off_the_loop(make)


def test_an_admin_sets_the_branding_a_viewer_then_sees(
        chromium: Browser, vault: VaultProcess, mail: MailServer) -> None:
    account_id, key = new_account(vault, "Quay Partners")  # on Pro
    with signed_in_tab(chromium, vault, mail, account_id, "brand@quay.example") as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/settings")
        page.get_by_role("textbox", name="Brand name", exact=True).fill(SCRIPT_NAME + " Quay")
        page.get_by_role("button", name="Save branding", exact=True).click()
        assert page.get_by_role("status").filter(has_text="The branding was saved").is_visible()
        assert page.get_by_role("textbox", name="Brand name").input_value() == \
            SCRIPT_NAME + " Quay"
        assert_accessible(page)
        page.goto(f"{vault.url}/v/{a_link(vault, key)}")
        assert page.get_by_text(SCRIPT_NAME + " Quay", exact=True).first.is_visible()
        assert page.title().endswith(SCRIPT_NAME + " Quay")
        assert_no_dialog(tab)


def test_a_free_accounts_admin_reads_why_branding_is_unavailable(
        chromium: Browser, vault: VaultProcess, mail: MailServer) -> None:
    def free_account() -> str:
        account_id, _ = vault.new_account(name="Corner Shop", plan="free")
        return account_id
    account_id = off_the_loop(free_account)
    with signed_in_tab(chromium, vault, mail, account_id, "owner@corner.example") as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/settings")
        assert page.get_by_role("heading", name="Branding", exact=True).is_visible()
        assert page.get_by_text("Custom branding needs the Pro or Business plan; this account "
                                "is on Free").is_visible()
        assert page.get_by_role("textbox", name="Brand name").count() == 0
        assert_accessible(page)

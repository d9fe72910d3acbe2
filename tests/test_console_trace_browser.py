"""The console's Trace page in Chromium, through a real vaultd and its SMTP server: a member
gives a page served to a viewer as the "Leaked image", presses "Trace", and the result names
the viewer; axe-core finds nothing serious before or after. The server's refusals, without the
browser: tests/test_console_trace.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser_session import chromium_browser
from tests.console_auth import console_vault
from tests.console_browser import (
    assert_accessible,
    assert_no_dialog,
    console_tab,
    press_on,
    signed_in_cookie,
)
from tests.http_helpers import served_page
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts its own vaultd, SMTP and Chromium


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("trace-browser") / "data", mail) as server:
        yield server


@pytest.fixture(scope="module")
def setup(vault: VaultProcess, mail: MailServer, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[str, Path]:
    """A member's cookie and a leaked page, made before Chromium starts (see chromium_browser)."""
    account, key = vault.new_account("Leaky Legal", plan="business")
    leak = tmp_path_factory.mktemp("leak") / "screenshot.jpg"
    leak.write_bytes(served_page(vault, key, "ann.lee@example.com", "<img src=x onerror=alert(1)>"))
    return signed_in_cookie(vault, mail, account, "tracer@leaky.example", "member"), leak


@pytest.fixture(scope="module")
def chromium(setup: tuple[str, Path]) -> Iterator[Browser]:
    with chromium_browser() as browser_:
        yield browser_


def test_a_trace_of_a_served_page_names_the_viewer(
        chromium: Browser, vault: VaultProcess, setup: tuple[str, Path]) -> None:
    cookie, leak = setup
    with console_tab(chromium, cookie=cookie, url=vault.url) as tab:
        page = tab.page
        page.goto(f"{vault.url}/console/trace")
        current = page.get_by_role("link", name="Trace", exact=True)
        assert current.get_attribute("aria-current") == "page"
        assert_accessible(page)
        page.get_by_label("Leaked image", exact=True).set_input_files(str(leak))
        press_on(page, page.get_by_role("button", name="Trace", exact=True))
        result = page.get_by_role("table", name="Result for screenshot.jpg")
        result.wait_for(timeout=120_000)
        row = result.get_by_role("row").nth(1)
        assert row.get_by_role("rowheader").inner_text() == "<img src=x onerror=alert(1)>"
        text = row.inner_text()
        assert "ann.lee@example.com" in text and "203.0.113.9" in text
        assert "invisible" in text
        assert_accessible(page)
        assert_no_dialog(tab)
        assert tab.csp_violations() == []

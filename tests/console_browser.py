"""The console in Chromium, for its browser tests: a member of a given role signed in (by a
mailed code, through the real SMTP server), axe-core run on a page, and keyboard-only helpers.

axe-core comes from npm (`scripts/install-axe.sh`, pinned in tests/axe/). It is added through the
DevTools protocol (an init script), so the console's CSP, which allows no inline script, still
applies to everything the page itself runs. Dialogs are recorded and dismissed: a page that
opens one unasked (a script injected through a file name) fails `assert_no_dialog`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from tests.browser_session import DESKTOP, RECORD_CSP_VIOLATIONS
from tests.console_auth import PLAIN_COOKIE, browser, new_member, sign_in
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from vaultd.records.members import RoleName

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING_IMPACTS = ("serious", "critical")
T = TypeVar("T")
MAX_TABS = 80  # more Tab presses than any console page has controls before its last one


@dataclass
class ConsoleTab:
    """A browser tab on the console, with what it showed that a test must see go wrong."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def csp_violations(self) -> list[str]:
        found: list[str] = self.page.evaluate("() => window.__cspViolations || []")
        return found


def axe_source() -> str:
    if not AXE.exists():
        pytest.skip("axe-core is not installed (bash scripts/install-axe.sh)")
    return AXE.read_text()


@contextmanager
def console_tab(browser_: Browser, *, cookie: str | None = None, url: str = "",
                device: dict[str, Any] = DESKTOP) -> Iterator[ConsoleTab]:
    """A fresh browser context (its own cookies), signed in when `cookie` is a session id."""
    context = browser_.new_context(**device)
    try:
        if cookie is not None:
            context.add_cookies([{"name": PLAIN_COOKIE, "value": cookie, "url": url}])
        context.add_init_script(RECORD_CSP_VIOLATIONS)
        context.add_init_script(axe_source())
        tab = ConsoleTab(context.new_page())
        tab.page.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message),
                                              dialog.dismiss()))
        tab.page.on("pageerror", lambda error: tab.errors.append(str(error)))
        yield tab
    finally:
        context.close()


def off_the_loop(call: Callable[[], T]) -> T:
    """`call` on a thread of its own: sync Playwright keeps an event loop running on this one,
    and the services' helpers (`vault.run_service`) start their own with asyncio.run."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


def add_member(vault: VaultProcess, account_id: str, email: str, role: RoleName = "admin") -> str:
    return off_the_loop(lambda: new_member(vault, account_id, email, role=role))


def new_account(vault: VaultProcess, name: str) -> tuple[str, str]:
    return off_the_loop(lambda: vault.new_account(name=name))


def signed_in_cookie(vault: VaultProcess, mail: MailServer, account_id: str, email: str,
                     role: RoleName = "admin") -> str:
    """A new member of `account_id` with `role`, signed in by a mailed code: the session cookie."""
    add_member(vault, account_id, email, role)
    with browser(vault) as client:
        sign_in(client, vault, mail, email)
        cookie: str = client.cookies[PLAIN_COOKIE]
    return cookie


@contextmanager
def signed_in_tab(browser_: Browser, vault: VaultProcess, mail: MailServer, account_id: str,
                  email: str, role: RoleName = "admin") -> Iterator[ConsoleTab]:
    """A tab on the console's Files page, signed in as a new member with `role`."""
    cookie = signed_in_cookie(vault, mail, account_id, email, role)
    with console_tab(browser_, cookie=cookie, url=vault.url) as tab:
        tab.page.goto(f"{vault.url}/console/files")
        yield tab


def serious_violations(page: Page) -> list[str]:
    """What axe-core finds serious or critical on the page as it is now."""
    found: list[str] = page.evaluate("""async (impacts) => {
        const result = await axe.run(document, {resultTypes: ["violations"]});
        return result.violations.filter((v) => impacts.includes(v.impact)).map((v) =>
            `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target).join(", ")}`);
    }""", list(BLOCKING_IMPACTS))
    return found


def assert_accessible(page: Page) -> None:
    violations = serious_violations(page)
    assert violations == [], f"axe-core on {page.url}:\n" + "\n".join(violations)


def assert_no_dialog(tab: ConsoleTab) -> None:
    assert tab.dialogs == [], f"the page opened dialogs: {tab.dialogs}"


def is_focused(target: Locator) -> bool:
    focused: bool = target.evaluate("(element) => element === document.activeElement")
    return focused


def tab_to(page: Page, target: Locator, *, backwards: bool = False) -> int:
    """Press Tab (Shift+Tab) until `target` has the focus; the number of presses. Fails if it
    never does, or if the focus it reaches shows no outline (focus must be visible)."""
    key = "Shift+Tab" if backwards else "Tab"
    for presses in range(1, MAX_TABS + 1):
        page.keyboard.press(key)
        if is_focused(target):
            assert_focus_visible(page)
            return presses
    raise AssertionError(f"{MAX_TABS} presses of {key} never reached {target}")


def assert_focus_visible(page: Page) -> None:
    outline = page.evaluate("""() => {
        const style = getComputedStyle(document.activeElement);
        return [style.outlineStyle, style.outlineWidth];
    }""")
    assert outline[0] != "none" and outline[1] != "0px", f"focus not visible: {outline}"


def type_into(page: Page, target: Locator, text: str) -> None:
    """Tab to a field and type, as a keyboard user does."""
    tab_to(page, target)
    page.keyboard.type(text)


def press_on(page: Page, target: Locator, key: str = "Enter") -> None:
    """Tab to a control and press it (Enter, or Space for a checkbox)."""
    tab_to(page, target)
    page.keyboard.press(key)

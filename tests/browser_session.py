"""Chromium under Playwright for the browser tests (viewer, room, gates): the browser a module
launches once (the `browser` fixture, which a module names next to its `owner`: the account
whose documents it reads, `owner` here on the module's `vault` or the module's own), and a
session on one hosted page: what the page logged, requested and drew."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.vault_process import ROOT, VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Request

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 900}}
PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
                         "is_mobile": True, "has_touch": True}
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 20_000

# Injected through the DevTools protocol, so the page's own CSP does not apply to it.
RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""

CANVAS_STATS = """() => Array.from(document.querySelectorAll("#pages canvas")).map((canvas) => {
  if (!canvas.width || !canvas.height) return {width: 0, variance: 0, nonWhite: 0};
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let count = 0, sum = 0, squares = 0, nonWhite = 0;
  for (let i = 0; i < data.length; i += 4 * 61) {
    const value = (data[i] + data[i + 1] + data[i + 2]) / 3;
    count += 1; sum += value; squares += value * value;
    if (value < 200) nonWhite += 1;
  }
  const mean = sum / count;
  return {width: canvas.width, variance: squares / count - mean * mean, nonWhite: nonWhite / count};
})"""


@dataclass
class Session:
    page: Page
    errors: list[str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    page_responses: list[tuple[float, int]] = field(default_factory=list)
    pages_in_flight: int = 0
    most_pages_in_flight: int = 0
    status: int = 0

    def record_request(self, request: Request) -> None:
        self.requests.append(request)
        if "/pages/" in request.url:
            self.page_request(1)

    def page_request(self, change: int) -> None:
        self.pages_in_flight += change
        self.most_pages_in_flight = max(self.most_pages_in_flight, self.pages_in_flight)

    def loaded(self, number: int) -> None:
        self.page.wait_for_selector(f'.page[data-page="{number}"][data-state="loaded"]',
                                    state="attached", timeout=WAIT_MS)

    def scroll_to(self, number: int) -> None:
        self.page.evaluate("(n) => document.querySelector(`.page[data-page='${n}']`)"
                           ".scrollIntoView()", number)

    def load_all(self, count: int) -> None:
        for number in range(1, count + 1):
            self.scroll_to(number)
            self.loaded(number)

    def settle(self) -> None:
        self.page.wait_for_function(
            "() => !document.querySelector('.page[data-state=loading]')", timeout=WAIT_MS)

    def shoot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@contextmanager
def chromium_browser() -> Iterator[Browser]:
    """Debian's Chromium, launched for a module's `browser` fixture; the module is skipped where
    Chromium or Playwright is missing. Sync Playwright keeps an event loop running on this thread
    until the browser closes, so whatever needs asyncio.run (an account, made through the
    services) is set up before: the fixture asks for it first."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def owner(vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = vault.new_account("Northwind Legal")
    with vault.client(key) as client:
        yield client


@pytest.fixture(scope="module")
def browser(owner: httpx.Client) -> Iterator[Browser]:  # the owner first: see chromium_browser
    with chromium_browser() as launched:
        yield launched


@contextmanager
def open_viewer(browser: Browser, url: str, device: dict[str, Any] = DESKTOP,
                before: Callable[[Page], None] | None = None) -> Iterator[Session]:
    context = browser.new_context(**device)
    try:
        session = Session(context.new_page())
        page = session.page
        page.on("console", lambda m: m.type == "error" and session.errors.append(m.text))
        page.on("pageerror", lambda e: session.errors.append(str(e)))
        # Playwright wants plain functions as listeners (it tags them), hence the lambdas.
        page.on("request", lambda r: session.record_request(r))  # noqa: PLW0108
        page.on("response", lambda r: "/pages/" in r.url and session.page_responses.append(
            (time.monotonic(), r.status)))
        page.on("requestfinished", lambda r: "/pages/" in r.url and session.page_request(-1))
        page.on("requestfailed", lambda r: "/pages/" in r.url and session.page_request(-1))
        page.add_init_script(RECORD_CSP_VIOLATIONS)
        if before:
            before(page)
        session.status = page.goto(url).status
        yield session
    finally:
        context.close()


def assert_drawn(stats: dict) -> None:
    assert stats["width"] > 0
    assert stats["variance"] > 100, stats  # text, a coloured block and the watermark
    assert 0.02 < stats["nonWhite"] < 0.98, stats

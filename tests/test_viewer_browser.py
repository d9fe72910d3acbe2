"""The hosted viewer in headless Chromium, against a live vaultd: pages drawn into canvases,
deterrents, printing, blur, referrers, revocation and the 404 page. Screenshots of the desktop
and phone layouts and of the 404 page go to test-artifacts/ for a human to look at."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import browser_session
from tests import documents as docs
from tests.browser_session import (
    CANVAS_STATS,
    DESKTOP,
    PHONE,
    WAIT_MS,
    assert_drawn,
    open_viewer,
)
from tests.http_helpers import NOT_AVAILABLE, create_link, upload_ok
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Route

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts Chromium

browser, owner = browser_session.browser, browser_session.owner  # this module's fixtures


@pytest.fixture(scope="module")
def report(owner: httpx.Client) -> dict:
    return upload_ok(owner, docs.pdf(pages=4), name="Q3 Board Report — Final.pdf")


def share(vault: VaultProcess, owner: httpx.Client, file_id: str) -> dict:
    link = create_link(owner, file_id, "ann.lee@example.com", viewerName="Ann Lee")
    vault.secrets.append(link["token"])
    return link


def test_every_page_is_drawn_into_a_canvas_as_it_scrolls_into_view(
    browser: Browser, vault: VaultProcess, owner: httpx.Client, report: dict
) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        assert viewer.status == 200
        viewer.loaded(1)
        stats = viewer.page.evaluate(CANVAS_STATS)
        assert len(stats) == 4 and stats[3]["width"] == 0  # page 4 waits for its turn
        viewer.loaded(2)
        viewer.settle()
        viewer.shoot("viewer-desktop")
        viewer.load_all(4)
        for page_stats in viewer.page.evaluate(CANVAS_STATS):
            assert_drawn(page_stats)
        assert viewer.most_pages_in_flight <= 2
        # The indicator follows the scroll on the next frame; page 4 also grew when drawn.
        viewer.scroll_to(4)
        viewer.page.wait_for_function(
            "() => document.querySelector('.page-indicator').textContent === 'Page 4 of 4'",
            timeout=WAIT_MS)
        header = viewer.page.text_content(".topbar")
        for text in ("Northwind Legal", "Q3 Board Report — Final.pdf", "Shared with Ann Lee",
                     "Page 4 of 4", "Expires"):
            assert text in header
        assert re.search(r"\bin (59 min|1 h)\b", header)
        assert not viewer.errors


def test_a_busy_server_is_retried_with_backoff(browser: Browser, vault: VaultProcess,
                                               owner: httpx.Client, report: dict) -> None:
    link = share(vault, owner, report["id"])
    refusals: list[float] = []

    def busy_once(route: Route) -> None:
        if refusals:
            route.continue_()
            return
        refusals.append(time.monotonic())
        route.fulfill(status=503, headers={"Retry-After": "1"}, content_type="application/json",
                      body='{"error": "render queue full"}')

    with open_viewer(browser, link["url"],
                     before=lambda page: page.route("**/pages/1", busy_once)) as viewer:
        viewer.loaded(1)
        waited = time.monotonic() - refusals[0]
        assert 0.9 < waited < 10
        assert_drawn(viewer.page.evaluate(CANVAS_STATS)[0])
        assert not viewer.page.is_visible("#ended")


def test_the_viewer_fits_a_phone_screen(browser: Browser, vault: VaultProcess,
                                        owner: httpx.Client, report: dict) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"], PHONE) as viewer:
        viewer.loaded(1)
        viewer.settle()
        viewer.shoot("viewer-phone")
        layout = viewer.page.evaluate("""() => ({
            page: document.scrollingElement.scrollWidth,
            stage: document.getElementById("stage").scrollWidth,
            header: document.querySelector(".topbar").scrollWidth,
            card: document.querySelector(".page").getBoundingClientRect().width})""")
        assert layout["page"] <= 390 and layout["stage"] <= 390 and layout["header"] <= 390
        assert 330 <= layout["card"] <= 370
        assert viewer.page.is_visible(".toolbar")
        assert not viewer.errors


def test_the_keyboard_moves_between_pages_and_zooms(browser: Browser, vault: VaultProcess,
                                                    owner: httpx.Client, report: dict) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        viewer.loaded(1)
        width = page.evaluate("() => document.querySelector('.page').offsetWidth")
        for key, expected in [("End", "4"), ("Home", "1"), ("j", "2"), ("PageDown", "3"),
                              ("k", "2"), ("ArrowLeft", "1")]:
            page.keyboard.press(key)
            page.wait_for_function("(n) => document.getElementById('current-page')"
                                   ".textContent === n", arg=expected, timeout=WAIT_MS)
        page.keyboard.press("+")
        assert page.text_content("#fit-width") == "125%"
        assert page.evaluate("() => document.querySelector('.page').offsetWidth") > width
        page.keyboard.press("0")
        assert page.text_content("#fit-width") == "Fit width"
        assert page.evaluate("() => document.querySelector('.page').offsetWidth") == width
        page.click("#zoom-out")
        assert page.text_content("#fit-width") == "80%"
        assert page.text_content("#current-page") == "1"


def test_context_menu_copy_save_and_print_are_prevented(browser: Browser, vault: VaultProcess,
                                                        owner: httpx.Client,
                                                        report: dict) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        viewer.loaded(1)
        prevented = viewer.page.evaluate("""() => {
            const canvas = document.querySelector("#pages canvas");
            const fire = (target, event) => !target.dispatchEvent(event);
            const key = (init) => new KeyboardEvent("keydown",
                Object.assign({bubbles: true, cancelable: true}, init));
            const plain = (type) => new Event(type, {bubbles: true, cancelable: true});
            return {
                contextmenu: fire(canvas, new MouseEvent("contextmenu",
                                                         {bubbles: true, cancelable: true})),
                copy: fire(document, plain("copy")),
                cut: fire(document, plain("cut")),
                dragstart: fire(canvas, plain("dragstart")),
                selectstart: fire(document.body, plain("selectstart")),
                ctrlS: fire(document.body, key({key: "s", ctrlKey: true})),
                ctrlP: fire(document.body, key({key: "p", ctrlKey: true})),
                cmdS: fire(document.body, key({key: "S", metaKey: true, shiftKey: true})),
                cmdP: fire(document.body, key({key: "p", metaKey: true})),
                printScreen: fire(document.body, new KeyboardEvent("keyup",
                    {key: "PrintScreen", bubbles: true, cancelable: true})),
                shieldedAfterPrintScreen: document.body.classList.contains("is-shielded"),
                ctrlF: fire(document.body, key({key: "f", ctrlKey: true})),
            };
        }""")
        assert prevented.pop("ctrlF") is False  # other shortcuts are left alone
        assert prevented == dict.fromkeys(prevented, True)
        viewer.page.wait_for_function(
            "() => !document.body.classList.contains('is-shielded')", timeout=5000)
        styles = viewer.page.evaluate("""() => {
            const style = getComputedStyle(document.body);
            return [style.userSelect, style.webkitUserDrag];
        }""")
        assert styles == ["none", "none"]


def test_printing_shows_nothing_but_a_notice(browser: Browser, vault: VaultProcess,
                                             owner: httpx.Client, report: dict) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        viewer.loaded(1)
        assert not page.is_visible(".print-notice")
        page.emulate_media(media="print")
        for hidden in ("#pages", ".topbar", ".confidential", ".toolbar"):
            assert not page.is_visible(hidden)
        assert page.evaluate("() => getComputedStyle(document.getElementById('stage'))"
                             ".display") == "none"
        assert page.is_visible(".print-notice")
        assert "Printing is disabled" in page.text_content(".print-notice")
        page.emulate_media(media="screen")
        assert page.is_visible("#pages")


def test_content_blurs_when_the_window_loses_focus_or_is_hidden(
    browser: Browser, vault: VaultProcess, owner: httpx.Client, report: dict
) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        viewer.loaded(1)
        filter_of_pages = "() => getComputedStyle(document.getElementById('pages')).filter"
        assert page.evaluate(filter_of_pages) == "none"
        page.evaluate("() => window.dispatchEvent(new Event('blur'))")
        assert "blur(" in page.evaluate(filter_of_pages)
        assert page.evaluate("() => document.body.classList.contains('is-shielded')")
        viewer.settle()
        viewer.shoot("viewer-blurred")
        page.evaluate("() => window.dispatchEvent(new Event('focus'))")
        unblurred = f"() => ({filter_of_pages})() === 'none'"  # after a short transition
        page.wait_for_function(unblurred, timeout=5000)
        set_hidden = """(hidden) => {
            Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
            document.dispatchEvent(new Event("visibilitychange"));
        }"""
        page.evaluate(set_hidden, True)
        assert "blur(" in page.evaluate(filter_of_pages)
        page.evaluate(set_hidden, False)
        page.wait_for_function(unblurred, timeout=5000)
        assert not page.is_visible("#ended")  # the focus check found the link still active


def test_no_request_carries_a_referer(browser: Browser, vault: VaultProcess, owner: httpx.Client,
                                      report: dict) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        viewer.load_all(4)
        viewer.page.evaluate("() => window.dispatchEvent(new Event('focus'))")  # a status check
        viewer.page.wait_for_timeout(200)
        urls = [request.url for request in viewer.requests]
        assert any(url.endswith("/assets/viewer.js") for url in urls)
        assert any(url.endswith("/assets/viewer.css") for url in urls)
        assert sum("/pages/" in url for url in urls) == 4
        assert any(url.endswith("/status") for url in urls)
        for request in viewer.requests:
            assert "referer" not in request.all_headers(), request.url


def test_pages_are_never_img_elements_and_nothing_violates_the_csp(
    browser: Browser, vault: VaultProcess, owner: httpx.Client, report: dict
) -> None:
    link = share(vault, owner, report["id"])
    with open_viewer(browser, link["url"]) as viewer:
        viewer.load_all(4)
        page = viewer.page
        assert page.evaluate("() => document.querySelectorAll('img, picture, object, embed, "
                             "iframe').length") == 0
        assert page.evaluate("""() => Array.from(document.querySelectorAll("*")).filter(
            (node) => ["src", "href", "srcset", "data", "style"].some(
                (name) => (node.getAttribute(name) || "").includes("/pages/"))).length""") == 0
        assert page.evaluate("() => performance.getEntriesByType('resource').filter("
                             "(entry) => entry.name.startsWith('blob:')).length") == 0
        assert page.evaluate("() => window.__cspViolations") == []
        assert not viewer.errors


def test_revoking_mid_view_stops_new_pages_and_shows_the_notice(
    browser: Browser, vault: VaultProcess, owner: httpx.Client
) -> None:
    file = upload_ok(owner, docs.pdf(pages=5), name="Merger term sheet.pdf")
    link = share(vault, owner, file["id"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        viewer.loaded(1)
        viewer.settle()
        assert page.evaluate("() => document.querySelector('.page[data-page=\"5\"]')"
                             ".dataset.state") == "idle"
        assert owner.delete(f"/views/{link['token']}").status_code == 204
        revoked_at = time.monotonic()
        page.keyboard.press("End")
        page.wait_for_selector("#ended", state="visible", timeout=WAIT_MS)
        assert NOT_AVAILABLE in page.text_content("#ended")
        assert not page.is_visible("#pages")
        widths = page.evaluate("() => Array.from(document.querySelectorAll('#pages canvas'))"
                               ".map((canvas) => canvas.width + canvas.height)")
        assert widths == [0] * 5
        later = [status for at, status in viewer.page_responses if at > revoked_at]
        assert later and set(later) == {404}
        viewer.shoot("viewer-revoked")
        count = len(viewer.page_responses)
        page.keyboard.press("Home")
        page.wait_for_timeout(300)
        assert len(viewer.page_responses) == count  # nothing is asked for any more


def test_the_status_poll_blanks_a_revoked_link_with_no_page_loading(
    browser: Browser, vault: VaultProcess, owner: httpx.Client
) -> None:
    file = upload_ok(owner, docs.pdf(pages=1), name="One pager.pdf")
    link = share(vault, owner, file["id"])
    with open_viewer(browser, link["url"], before=lambda page: page.clock.install()) as viewer:
        page = viewer.page
        viewer.loaded(1)
        viewer.settle()
        assert owner.delete(f"/views/{link['token']}").status_code == 204
        page.clock.run_for(16_000)  # one status poll interval, and no page left to load
        page.wait_for_selector("#ended", state="visible", timeout=WAIT_MS)
        assert page.evaluate("() => document.querySelector('#pages canvas').width") == 0
        assert [status for _, status in viewer.page_responses] == [200]


def test_a_bad_token_gets_the_calm_404_page(browser: Browser, vault: VaultProcess) -> None:
    for name, device in [("not-available-desktop", DESKTOP), ("not-available-phone", PHONE)]:
        with open_viewer(browser, f"{vault.url}/v/{'A' * 43}", device) as viewer:
            assert viewer.status == 404
            text = viewer.page.text_content("body")
            assert NOT_AVAILABLE in text
            for hint in ("expired", "revoked", "unknown", "deleted", "token", "error"):
                assert hint not in text.lower()
            assert viewer.page.evaluate("() => document.scripts.length") == 0
            assert viewer.page.is_visible(".notice-card")
            assert viewer.page.evaluate("() => window.__cspViolations") == []
            viewer.shoot(name)

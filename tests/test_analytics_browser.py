"""The hosted viewer in headless Chromium reports visible time per page: a scripted visit (page 1
for 3 s, page 2 for 2 s, then the tab hidden for 2 s) is reported within a second, and the
hidden time is not counted. Driven over raw CDP (see tests/cdp.py for why not Playwright)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.cdp import CHROMIUM, Cdp, chromium
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess

pytestmark = [pytest.mark.slow, pytest.mark.browser]

VISIBLE = "document.visibilityState"


async def hold(seconds: float, since: float) -> None:
    await asyncio.sleep(max(0.0, since + seconds - time.monotonic()))


async def scripted_visit(url: str) -> list[str]:
    """Returns the visibility states seen while hidden and after coming back."""
    async with chromium() as (browser, tab, tab_id):
        await tab.call("Page.enable")
        await tab.call("Page.bringToFront")  # a headless tab has no focus until brought forward
        await tab.call("Page.navigate", url=url)
        await tab.wait_for("document.readyState !== 'loading' && !!document.body.dataset"
                           ".activityUrl && document.hasFocus()")
        started = time.monotonic()  # viewer-activity.js starts counting from here
        await tab.wait_for("!!document.querySelector('.page[data-page=\"1\"]"
                           "[data-state=\"loaded\"]')")
        await hold(3.0, started)
        await tab.evaluate("document.getElementById('next-page').click()")
        on_page_two = time.monotonic()
        await tab.wait_for("document.getElementById('current-page').textContent === '2'", 5)
        await hold(2.0, on_page_two)
        states = await hide_for(browser, tab, tab_id, 2.0)
        await tab.call("Page.navigate", url="about:blank")  # pagehide: the beacon goes out
        await asyncio.sleep(0.5)
        return states


async def hide_for(browser: Cdp, tab: Cdp, tab_id: str, seconds: float) -> list[str]:
    other = await browser.call("Target.createTarget", url="about:blank")
    await browser.call("Target.activateTarget", targetId=other["targetId"])
    await tab.wait_for(f"{VISIBLE} === 'hidden'", 5)
    hidden_state = await tab.evaluate(VISIBLE)
    await asyncio.sleep(seconds)
    await browser.call("Target.activateTarget", targetId=tab_id)
    await tab.call("Page.bringToFront")
    await tab.wait_for(f"{VISIBLE} === 'visible' && document.hasFocus()", 5)
    return [hidden_state, await tab.evaluate(VISIBLE)]


def reported(api: httpx.Client, token: str) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = api.get(f"/views/{token}/analytics").json()
        if body["totalSeconds"] >= 4.0:
            return body
        time.sleep(0.2)
    return body


def test_the_viewer_reports_visible_time_per_page_and_not_hidden_time(
        api: httpx.Client, vault: VaultProcess) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    file = upload_ok(api, docs.pdf(3))
    token = create_link(api, file["id"], "reader@example.com")["token"]
    vault.secrets.append(token)
    states = asyncio.run(scripted_visit(f"{vault.url}/v/{token}"))
    assert states == ["hidden", "visible"]  # the tab really was hidden, then shown again
    body = reported(api, token)
    seconds = {row["page"]: row["seconds"] for row in body["pages"]}
    assert seconds[1] == pytest.approx(3.0, abs=1.0), body
    assert seconds[2] == pytest.approx(2.0, abs=1.0), body
    assert seconds[3] == 0.0
    assert body["totalSeconds"] == pytest.approx(5.0, abs=1.0), body  # 7 if hidden time counted

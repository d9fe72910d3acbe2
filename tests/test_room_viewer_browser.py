"""The hosted room viewer in headless Chromium: the numbered index, a document opened
from it in the existing viewer with its pages drawn, no CSP violation, and a document removed
from the room blanked by the viewer's status poll."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from tests import browser_session
from tests import documents as docs
from tests.browser_session import (
    CANVAS_STATS,
    WAIT_MS,
    assert_drawn,
    open_viewer,
)
from tests.http_helpers import upload_ok
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts Chromium

browser, owner = browser_session.browser, browser_session.owner  # this module's fixtures


def test_a_reader_opens_a_document_from_the_room_index(
        browser: Browser, vault: VaultProcess, owner: httpx.Client) -> None:
    room = create_room(owner, "Series A data room")
    finance = add_folder(owner, room["id"], "Finance")
    report = upload_ok(owner, docs.pdf(pages=2), name="Audited accounts.pdf")
    item = add_file(owner, room["id"], report["id"], folder=finance["id"])
    link = room_link(owner, room["id"], "ann.lee@example.com", viewerName="Ann Lee")
    vault.secrets.append(link["token"])
    with open_viewer(browser, link["url"]) as session:
        page = session.page
        assert session.status == 200
        numbers = page.locator(".room-item .room-number").all_inner_texts()
        assert numbers == ["1", "1.1"]
        assert page.locator(".room-item.file .room-pages").inner_text() == "2 pages"
        session.shoot("room-index")
        page.click("text=Audited accounts.pdf")
        page.wait_for_url(f"**/r/*/files/{report['id']}", timeout=WAIT_MS)
        session.loaded(1)
        session.settle()
        assert_drawn(page.evaluate(CANVAS_STATS)[0])
        assert page.evaluate("window.__cspViolations") == []
        assert session.errors == []
        session.shoot("room-document")
        # Removed from the room: the open viewer's status poll blanks it.
        assert owner.delete(f"/rooms/{room['id']}/items/{item['id']}").status_code == 204
        page.wait_for_selector("#ended:not([hidden])", timeout=WAIT_MS * 2)

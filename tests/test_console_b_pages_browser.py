"""Rooms, a room, Activity (both feeds), Trace and Settings in Chromium, as an admin and as an
auditor, with names that carry script in a room, a folder, a file, a member, a key and a
webhook URL: axe-core finds nothing serious or critical on any of them, no script runs (no
dialog), the CSP is never violated, and the named controls a screen reader announces are there
for the admin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests import documents as docs
from tests.browser_session import chromium_browser
from tests.console_auth import console_vault
from tests.console_browser import assert_accessible, assert_no_dialog, console_tab, signed_in_cookie
from tests.http_helpers import create_link, created, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # starts its own vaultd, SMTP and Chromium

SCRIPT = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("pages-b") / "data", mail) as server:
        yield server


@pytest.fixture(scope="module")
def made(vault: VaultProcess, mail: MailServer) -> dict[str, str]:
    """Everything before Chromium starts (its event loop holds the thread)."""
    account, key = vault.new_account("Script Co", plan="business")
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name=f"{SCRIPT}.pdf")
        link = create_link(api, file["id"], "v@viewer.example", viewerName=SCRIPT)
        vault.secrets.append(link["token"])
        assert api.get(f"/views/{link['token']}/pages/1").status_code == 200
        room = created(api.post("/rooms", json={"name": f"{SCRIPT} room"}))
        folder = created(api.post(f"/rooms/{room['id']}/folders", json={"name": SCRIPT}))
        created(api.post(f"/rooms/{room['id']}/files",
                         json={"fileId": file["id"], "folderId": folder["id"]}))
        vault.secrets.append(created(api.post("/keys", json={"name": SCRIPT}))["key"])
        created(api.post("/members", json={"email": "x@script.example", "name": SCRIPT,
                                           "role": "member"}))
        hook = created(api.post("/webhooks", json={
            "url": "https://hooks.example.com/in?x=<script>alert(1)</script>",
            "events": ["view.opened"]}))
        vault.secrets.append(hook["secret"])
    return {"room": room["id"],
            "admin": signed_in_cookie(vault, mail, account, "admin@script.example", "admin"),
            "auditor": signed_in_cookie(vault, mail, account, "aud@script.example", "auditor")}


@pytest.fixture(scope="module")
def chromium(made: dict[str, str]) -> Iterator[Browser]:
    with chromium_browser() as browser_:
        yield browser_


PAGES = ("rooms", "rooms/{room}", "activity", "activity?feed=files", "trace", "settings")
ADMIN_CONTROLS = {"rooms": [("button", "Create room"), ("textbox", "Room name")],
                  "rooms/{room}": [("button", "Add folder"), ("button", "Create link"),
                                   ("textbox", "Viewer email"), ("textbox", "Passcode")],
                  "activity": [("combobox", "Action"), ("button", "Filter")],
                  "trace": [("button", "Trace")],
                  "settings": [("button", "Create key"), ("button", "Invite member"),
                               ("textbox", "Email"), ("combobox", "Role"),
                               ("button", "Add endpoint"), ("textbox", "Endpoint URL")]}


@pytest.mark.parametrize("who", ["admin", "auditor"])
def test_every_page_is_accessible_runs_no_injected_script_and_keeps_the_csp(
        chromium: Browser, vault: VaultProcess, made: dict[str, str], who: str) -> None:
    with console_tab(chromium, cookie=made[who], url=vault.url) as tab:
        for path in PAGES:
            response = tab.page.goto(f"{vault.url}/console/{path.format(room=made['room'])}")
            assert response is not None and response.status == 200, path
            assert_accessible(tab.page)
            for role, name in ADMIN_CONTROLS.get(path, []) if who == "admin" else []:
                assert tab.page.get_by_role(role, name=name, exact=True).count() == 1, (
                    path, role, name)
        if who == "admin":
            assert tab.page.get_by_label("Leaked image", exact=True).count() == 0  # settings
            tab.page.goto(f"{vault.url}/console/trace")
            assert tab.page.get_by_label("Leaked image", exact=True).count() == 1
        assert_no_dialog(tab)
        assert tab.errors == []
        assert tab.csp_violations() == []

"""The console's Activity page over HTTP, through a real vaultd: the account's actions with
their actor, narrowed to one action, older entries on demand without a repeat or a gap; the
files' actions with the file's name as text; the export offered on Business only and refused
on Pro; bad filters refused in words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.http_helpers import assert_json_error, created, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
SCRIPT_NAME = "<img src=x onerror=alert(1)>.pdf"
ROW = re.compile(r"<tr>\s*<td>([^<]+)</td>\s*<td>([^<]*)</td>\s*<td>([^<]+)</td>"
                 r"\s*<td>([^<]*)</td>")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("activity") / "data", mail) as server:
        yield server


def auditor(vault: VaultProcess, mail: MailServer, account: str, email: str) -> httpx.Client:
    new_member(vault, account, email, role="auditor")
    client = browser(vault)
    sign_in(client, vault, mail, email)
    return client


def rows(page: str) -> list[tuple[str, str, str, str]]:
    return ROW.findall(page)


def test_the_account_feed_pages_filters_and_names_each_actor(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Feed Co", plan="pro")
    # The auditor signs in first: their sign-in is the log's oldest entry.
    with closing(auditor(vault, mail, account, "eyes@feed.example")) as client:
        with vault.client(key) as api:
            named = created(api.post("/keys", json={"name": "deploy bot", "role": "admin"}))
            vault.secrets.append(named["key"])
        with vault.client(named["key"]) as bot:
            for n in range(53):
                created(bot.post("/members", json={"email": f"p{n}@feed.example",
                                                   "role": "member"}))
        first = client.get("/console/activity", headers=HTML)
        assert first.status_code == 200
        shown = rows(first.text)
        assert len(shown) == 50
        assert all(r[1] == "deploy bot (API key)" and r[2] == "member.added" for r in shown)
        assert shown[0][3] == "p52@feed.example"
        older = re.search(r'href="(/console/activity\?[^"]+)">Older entries', first.text)
        assert older
        second = client.get(older.group(1).replace("&amp;", "&"), headers=HTML)
        rest = rows(second.text)
        targets = [r[3] for r in shown + rest if r[2] == "member.added"]
        assert targets == [f"p{n}@feed.example" for n in range(52, -1, -1)]
        assert [r[2] for r in rest][-2:] == ["key.created", "signin"]
        assert rest[-1][1] == "eyes@feed.example"
        assert "Older entries" not in second.text
        only = client.get("/console/activity", params={"action": "key.created"}, headers=HTML)
        assert [(r[2], r[3]) for r in rows(only.text)] == [("key.created", named["id"])]
        assert "Exporting the log as CSV needs the Business plan; this account is on Pro." in (
            first.text)
        assert_json_error(client.get("/console/api/activity", params={"format": "csv"}), 402,
                          "exporting the log needs the Business plan (account is on Pro)")
        assert_json_error(client.get("/console/activity", params={"action": "nope"}), 400,
                          re.compile(r"action must be one of member\.added, .*"))
        assert_json_error(client.get("/console/activity", params={"after": "!!"}), 400,
                          "cursor is not one this page gave")
        assert_json_error(client.get("/console/activity", params={"feed": "rooms"}), 400,
                          "feed must be account or files")


def test_the_files_feed_shows_names_as_text_and_business_exports(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Files Feed Co", plan="business")
    with vault.client(key) as api:
        upload_ok(api, docs.pdf(1), name=SCRIPT_NAME)
        assert api.delete(f"/files/{upload_ok(api, docs.pdf(1), name='gone.pdf')['id']}"
                          ).status_code == 204
    with closing(auditor(vault, mail, account, "eyes@files.example")) as client:
        page = client.get("/console/activity", params={"feed": "files"}, headers=HTML)
        assert page.status_code == 200
        assert SCRIPT_NAME not in page.text
        assert "&lt;img src=x onerror=alert(1)&gt;.pdf" in page.text
        actions = [r[2] for r in rows(page.text)]
        assert actions == ["delete", "upload", "upload"]
        assert "(deleted file)" in page.text
        uploads = client.get("/console/activity", params={"feed": "files", "action": "upload"},
                             headers=HTML)
        assert [r[2] for r in rows(uploads.text)] == ["upload", "upload"]
        account_page = client.get("/console/activity", headers=HTML)
        assert 'href="/console/api/activity?format=csv" download>Export CSV' in account_page.text
        exported = client.get("/console/api/activity", params={"format": "csv"})
        assert exported.status_code == 200
        assert exported.text.startswith("at,action,actorKind")

"""What a console page makes the database do, counted by the database (`tests.db_commands`): a
room's page offers the account's newest files by name and reads none of their links; a file's
page lists its newest links by number, with the file's own count as the total, and its latest
50 access-log entries, "Older entries" reaching the rest.

The records a page reads at 10^5 files and 10^6 log entries are measured by `bench.console`
(docs/performance.md); these tests hold the shape of those reads on a real vaultd.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests import db_commands
from tests import documents as docs
from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.db_commands import CommandCounter, sent
from tests.http_helpers import create_link, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from vaultd.db import Db
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
TRIES = 3  # the fewest commands of a few loads: the server's background work reads links too
counter = db_commands.counter  # this module's fixture, counting its vault's database


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("reads") / "data", mail) as server:
        yield server


def fewest_link_commands(counter: CommandCounter, load: Callable[[], httpx.Response]) -> int:
    """The fewest commands on `links` that one load of a page sent, over TRIES loads."""
    counts = []
    for _ in range(TRIES):
        before = counter.snapshot()
        response = load()
        assert response.status_code == 200, response.text
        counts.append(sum(sent(before, counter.snapshot(), {"links"}).values()))
    return min(counts)


def test_a_rooms_page_offers_the_newest_files_without_reading_their_links(
        vault: VaultProcess, mail: MailServer, counter: CommandCounter) -> None:
    account, key = vault.new_account("Room Reads Co", plan="pro")
    with vault.client(key) as api:
        names = [f"Deck {number}.pdf" for number in range(3)]
        uploaded = [upload_ok(api, docs.pdf(1), name=name) for name in names]
        for file in uploaded:  # each with a live link: its count would be a read of links
            create_link(api, file["id"])
        room = api.post("/rooms", json={"name": "Project Elm"}).json()
    new_member(vault, account, "admin@reads.example", role="admin")
    with closing(browser(vault)) as client:
        sign_in(client, vault, mail, "admin@reads.example")
        page = client.get(f"/console/rooms/{room['id']}", headers=HTML)
        offered = re.findall(r'<option value="([0-9a-f-]{36})">([^<]+)</option>', page.text)
        assert offered == [(file["id"], file["name"]) for file in reversed(uploaded)]
        assert fewest_link_commands(
            counter, lambda: client.get(f"/console/rooms/{room['id']}", headers=HTML)) == 0


def test_a_files_page_lists_its_newest_links_by_number_with_its_count(
        vault: VaultProcess, mail: MailServer, counter: CommandCounter) -> None:
    account, key = vault.new_account("Link Reads Co", plan="pro")
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name="Board pack.pdf")
        for number in range(25):
            create_link(api, file["id"], email=f"reader{number}@buyer.example")
        listed = api.get(f"/files/{file['id']}/views?perPage=100").json()
    assert listed["total"] == 25
    assert [view["viewerEmail"] for view in listed["views"]] == [
        f"reader{number}@buyer.example" for number in range(24, -1, -1)]
    new_member(vault, account, "admin@links.example", role="admin")
    with closing(browser(vault)) as client:
        sign_in(client, vault, mail, "admin@links.example")
        path = f"/console/files/{file['id']}"
        first = client.get(path, headers=HTML).text
        assert "reader24@buyer.example" in first and "reader5@buyer.example" in first
        assert "reader4@buyer.example" not in first  # 20 a page: on the second
        second = client.get(f"{path}?linksPage=2", headers=HTML).text
        assert "reader4@buyer.example" in second and "reader5@buyer.example" not in second
        # One range of numbers for the page's 20 links: no count of the file's links.
        assert fewest_link_commands(counter, lambda: client.get(path, headers=HTML)) == 1


def test_a_files_page_shows_its_latest_50_entries_and_older_ones_on_demand(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Log Reads Co", plan="pro")
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(1), name="Minutes.pdf")
    now = utcnow()
    entries = [{"_id": str(uuid.uuid4()), "accountId": account, "fileId": file["id"],
                "action": "view", "at": now - timedelta(seconds=(70 - number) / 2),
                "viewerEmail": f"visitor{number}@buyer.example", "ip": "203.0.113.9"}
               for number in range(70)]  # since the upload, visitor69 the newest

    async def write(db: Db) -> Any:
        return await db.access_log.insert_many(entries)
    vault.run_service(write)
    new_member(vault, account, "admin@log.example", role="admin")
    with closing(browser(vault)) as client:
        sign_in(client, vault, mail, "admin@log.example")
        first = client.get(f"/console/files/{file['id']}", headers=HTML).text
        rows = [action for action in re.findall(r"<tr><td>[^<]+</td><td>(\w+)</td>", first)
                if action in ("view", "upload")]  # the log's rows (the time table's are numbers)
        assert len(rows) == 50 and rows[0] == "upload"  # the upload's entry is the newest
        shown = set(re.findall(r"visitor(\d+)@buyer\.example", first))
        assert shown == {str(number) for number in range(21, 70)}
        older = re.search(r'<a href="([^"]+)">Older entries</a>', first)
        assert older
        rest = client.get(older.group(1).replace("&amp;", "&"), headers=HTML).text
        assert set(re.findall(r"visitor(\d+)@buyer\.example", rest)) == {
            str(number) for number in range(21)}
        assert "Older entries" not in rest

"""The console's Rooms pages over HTTP, through a real vaultd: a room created, a folder named
with script shown as text, a file added, the numbered index, a room link made by the share form
that opens the hosted room, the readers' and documents' tables; an auditor's posts refused in
its role's words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import console_vault, member_client
from tests.http_helpers import assert_json_error, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
SCRIPT_FOLDER = "<script>alert(1)</script> Finance"
CONTENT_REFUSED = "the auditor role cannot change files, links or rooms"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("rooms") / "data", mail) as server:
        yield server


def test_a_member_builds_a_room_shares_it_and_sees_its_reader(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Deal Co", plan="pro")
    with vault.client(key) as api:
        file = upload_ok(api, docs.pdf(2), name="Term sheet.pdf")
    client, csrf = member_client(vault, mail, account, "deal@deal.example", "member")
    with closing(client):
        made = client.post("/console/rooms", data={"_csrf": csrf, "name": "Project Oak"},
                           headers=HTML)
        assert made.status_code == 303
        room = made.headers["Location"].split("?")[0]
        assert made.headers["Location"].endswith("?done=room-created")
        assert client.post(f"{room}/folders", data={"_csrf": csrf, "name": SCRIPT_FOLDER},
                           headers=HTML).status_code == 303
        page = client.get(room, headers=HTML).text
        folder_id = re.search(r'<option value="([^"]+)">1 ', page)
        assert folder_id
        assert client.post(f"{room}/files", headers=HTML, data={
            "_csrf": csrf, "fileId": file["id"], "parentId": folder_id.group(1)}
        ).status_code == 303
        page = client.get(room, headers=HTML).text
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt; Finance" in page
        assert re.search(r"<td>1\.1</td><th scope=\"row\">Term sheet\.pdf</th><td>file</td>"
                         r"<td class=\"num\">2</td>", page)
        shared = client.post(f"{room}/share", headers=HTML, data={
            "_csrf": csrf, "viewerEmail": "ann@buyer.example", "viewerName": "Ann Buyer",
            "passcode": ""})
        assert shared.status_code == 201, shared.text
        url = re.search(r'<input id="new-link" type="text" readonly value="([^"]+)"',
                        shared.text)
        assert url and "/r/" in url.group(1)
        vault.secrets.append(url.group(1).rsplit("/", 1)[1])
        token = url.group(1).rsplit("/", 1)[1]
        assert httpx.get(f"{vault.url}/r/{token}", timeout=60).status_code == 200
        with vault.client(key) as api:
            got = api.get(f"/room-views/{token}/files/{file['id']}/pages/1")
            assert got.status_code == 200
        readers = client.get(room, headers=HTML).text
        assert re.search(r"<th scope=\"row\">Ann Buyer &lt;ann@buyer.example&gt;</th>"
                         r"<td class=\"num\">1</td><td class=\"num\">1</td>", readers)
        assert "<th scope=\"row\">Term sheet.pdf</th><td class=\"num\">1</td>" in readers
        short = client.post(f"{room}/share", headers=HTML, data={
            "_csrf": csrf, "viewerEmail": "ann@buyer.example", "passcode": "abc"})
        assert short.status_code == 400 and 'value="ann@buyer.example"' in short.text


def test_an_auditor_reads_rooms_and_its_posts_are_refused(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Audit Rooms Co", plan="pro")
    with vault.client(key) as api:
        room = api.post("/rooms", json={"name": "Kept"}).json()
        file = upload_ok(api, docs.pdf(1), name="Kept.pdf")
    client, csrf = member_client(vault, mail, account, "look@rooms.example", "auditor")
    with closing(client):
        listing = client.get("/console/rooms", headers=HTML)
        assert listing.status_code == 200 and "Kept" in listing.text
        assert "Create room" not in listing.text
        page = client.get(f"/console/rooms/{room['id']}", headers=HTML)
        assert page.status_code == 200 and "Add folder" not in page.text
        for path, fields in (("/console/rooms", {"name": "Mine"}),
                             (f"/console/rooms/{room['id']}/folders", {"name": "F"}),
                             (f"/console/rooms/{room['id']}/files", {"fileId": file["id"]}),
                             (f"/console/rooms/{room['id']}/share",
                              {"viewerEmail": "x@y.example"})):
            refused = client.post(path, data={"_csrf": csrf, **fields}, headers=HTML)
            assert refused.status_code == 403 and CONTENT_REFUSED in refused.text
            assert_json_error(client.post(path, data={"_csrf": csrf, **fields}), 403,
                              CONTENT_REFUSED)
    with vault.client(key) as api:
        assert api.get("/rooms").json()["total"] == 1
        assert api.get(f"/rooms/{room['id']}").json()["tree"] == []


def _room_names(html: str) -> list[str]:
    return re.findall(r'<th scope="row"><a href="/console/rooms/[^"]+">([^<]+)</a></th>', html)


def test_the_rooms_page_shows_50_a_page_and_reaches_the_older_ones(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Many Rooms Co", plan="business")
    with vault.client(key) as api:
        for number in range(53):
            assert api.post("/rooms", json={"name": f"Room {number}"}).status_code == 201
    client, _ = member_client(vault, mail, account, "rooms@many.example", "auditor")
    with closing(client):
        first = client.get("/console/rooms", headers=HTML).text
        assert _room_names(first) == [f"Room {number}" for number in range(52, 2, -1)]
        assert "Page 1 of 2 (53 rooms)" in first and "Newer rooms" not in first
        older = re.search(r'<a href="(/console/rooms\?page=2)" rel="next">Older rooms</a>', first)
        assert older, first
        second = client.get(older.group(1), headers=HTML).text
        assert _room_names(second) == ["Room 2", "Room 1", "Room 0"]
        assert "Page 2 of 2 (53 rooms)" in second and "Older rooms" not in second
        assert '<a href="/console/rooms?page=1" rel="prev">Newer rooms</a>' in second
        past = client.get("/console/rooms?page=3", headers=HTML)
        assert past.status_code == 200 and _room_names(past.text) == []
        bad = client.get("/console/rooms?page=0", headers=HTML)
        assert bad.status_code == 400 and "page must be" in bad.text, bad.text

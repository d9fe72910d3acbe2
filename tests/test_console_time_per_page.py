"""A file's "Time per page" in the console reads one record per file, however many links the
file has: the totals kept beside each link's own record (services.analytics.file_pages) match
what the API computes from every link's record, a file older than them is built once from its
links' records, and once built the page reads none of those records (they are deleted under it
and the page shows the same figures, while the API, which reads them, then shows none).
Through a real vaultd, its embedded database and the console's HTML."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.console_auth import browser, console_vault, new_member, sign_in
from tests.http_helpers import create_link, upload_ok
from tests.mail_server import MailServer
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd and SMTP server

HTML = {"Accept": "text/html"}
ROW = re.compile(r"<tr><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td></tr>")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, mail: MailServer) -> Iterator[VaultProcess]:
    with console_vault(tmp_path_factory.mktemp("time-per-page") / "data", mail,
                       VAULTD_ANALYTICS_FLUSH_SECONDS="0") as server:
        yield server


def page_table(client: httpx.Client, file_id: str) -> list[tuple[int, int, int, int]]:
    """(page, seconds, views, readers) of the console's Time per page table."""
    html = client.get(f"/console/files/{file_id}", headers=HTML).text
    table = html[html.index('id="time-heading"'):]
    table = table[:table.index("</table>")]
    return [(int(a), int(b), int(c), int(d)) for a, b, c, d in ROW.findall(table)]


def api_pages(api: httpx.Client, file_id: str) -> list[tuple[int, int, int]]:
    report = api.get(f"/files/{file_id}/analytics").json()
    return [(row["page"], round(row["seconds"]), row["views"]) for row in report["pages"]]


def opened_long_ago(vault: VaultProcess, file_id: str) -> None:
    """Time may only be reported up to the time since the link's first open: move it back."""
    async def move(db: Any) -> None:
        await db.link_stats.update_many({"fileId": file_id}, {"$set": {
            "firstOpenedAt": utcnow() - timedelta(hours=1)}})
    vault.run_service(move)


def read(api: httpx.Client, token: str, *pages: int) -> None:
    for page in pages:
        assert api.get(f"/views/{token}/pages/{page}").status_code == 200


def report(api: httpx.Client, token: str, seconds: dict[int, float]) -> None:
    answer = api.post(f"/views/{token}/activity", json={"events": [
        {"page": page, "seconds": value} for page, value in seconds.items()]})
    assert answer.status_code == 200, answer.text


def test_time_per_page_reads_one_record_and_matches_the_links(
        vault: VaultProcess, mail: MailServer) -> None:
    account, key = vault.new_account("Timing Ltd", plan="pro")
    new_member(vault, account, "timer@timing.example", role="auditor")
    with vault.client(key) as api, browser(vault) as member:
        sign_in(member, vault, mail, "timer@timing.example")
        file_id = upload_ok(api, docs.pdf(3), name="Three pages.pdf")["id"]
        early = create_link(api, file_id, "early@viewer.example")["token"]
        read(api, early, 1, 2)  # before the totals exist: the page's first read builds them
        wait_until(lambda: api_pages(api, file_id)[1][2] == 1, what="early's views recorded")
        opened_long_ago(vault, file_id)
        report(api, early, {1: 30, 2: 12})
        assert page_table(member, file_id) == [(1, 30, 1, 1), (2, 12, 1, 1), (3, 0, 0, 0)]
        # Kept from now on by each link's updates: two more links, one reading page 1 twice.
        late, other = (create_link(api, file_id, f"{name}@viewer.example")["token"]
                       for name in ("late", "other"))
        read(api, late, 1, 1, 3)
        read(api, other, 1)
        wait_until(lambda: api_pages(api, file_id)[0][2] == 4, what="the later views recorded")
        opened_long_ago(vault, file_id)
        report(api, late, {1: 20, 3: 45.4})
        report(api, other, {1: 5})
        expected = [(1, 55, 4, 3), (2, 12, 1, 1), (3, 45, 1, 1)]
        assert page_table(member, file_id) == expected
        assert [row[:3] for row in expected] == api_pages(api, file_id)

        async def drop_link_records(db: Any) -> int:
            dropped = await db.link_stats.delete_many({"fileId": file_id})
            return int(dropped.deleted_count)
        assert vault.run_service(drop_link_records) == 3
        assert page_table(member, file_id) == expected  # none of them was read
        assert api_pages(api, file_id) == [(1, 0, 0), (2, 0, 0), (3, 0, 0)]
        assert "Seconds read per page; the most on page 1 (55 s)" in member.get(
            f"/console/files/{file_id}", headers=HTML).text

"""Page views are added up per link and written together (vaultd.services.analytics.engagement):
counts stay exact under a burst of pages, reach the database on their own within the flush interval,
and a clean stop writes what was pending."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.secrets import digest

pytestmark = pytest.mark.slow  # starts and restarts its own vaultd

PAGES = 5


@pytest.fixture(scope="module")
def own_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    # Views wait 30 s before their write: only a read or a clean stop can write them sooner.
    vault = VaultProcess(tmp_path_factory.mktemp("batching") / "data",
                         env={"VAULTD_RENDER_WORKERS": "2", "VAULTD_ANALYTICS_FLUSH_SECONDS": "30"})
    vault.start()
    try:
        yield vault
    finally:
        vault.stop()


def _client(vault: VaultProcess, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{vault.url}/v1", timeout=60,
                        headers={"Authorization": f"Bearer {key}"})


def _burst(vault: VaultProcess, key: str, requests: list[int]) -> str:
    """A new link of a 5-page file, its pages requested by 4 clients at once."""
    with _client(vault, key) as api:
        file = upload_ok(api, docs.pdf(pages=PAGES))
        token = str(create_link(api, file["id"], "kim@example.com")["token"])
    vault.secrets.append(token)

    def fetch(page: int) -> int:
        with _client(vault, key) as api:
            return api.get(f"/views/{token}/pages/{page}").status_code

    with ThreadPoolExecutor(4) as threads:
        assert set(threads.map(fetch, requests)) == {200}
    return token


def _stored_views(vault: VaultProcess, token: str) -> dict[str, int]:
    async def read(db: Any) -> dict[str, int]:
        link = await db.links.find_one({"hash": digest(token)})
        stats = await db.link_stats.find_one({"_id": link["_id"]}) or {}
        return {key: value["views"] for key, value in stats.get("pages", {}).items()}

    result: dict[str, int] = vault.run_service(read)
    return result


REQUESTS = [page for _ in range(6) for page in range(1, PAGES + 1)]  # 30 pages, 6 of each
EXPECTED = {f"p{page}": count for page, count in Counter(REQUESTS).items()}


def test_a_burst_of_pages_counts_exactly(own_vault: VaultProcess) -> None:
    _, key = own_vault.new_account("Burst Co")
    token = _burst(own_vault, key, REQUESTS)
    with _client(own_vault, key) as api:
        body = api.get(f"/views/{token}/analytics").json()  # flushes this process first
    assert [p["views"] for p in body["pages"]] == [6] * PAGES
    assert body["completion"] == 1.0


def test_pending_views_wait_for_the_interval(own_vault: VaultProcess) -> None:
    _, key = own_vault.new_account("Waiting Co")
    token = _burst(own_vault, key, REQUESTS)
    assert sum(_stored_views(own_vault, token).values()) < len(REQUESTS)  # first page(s) only


def test_an_analytics_read_writes_its_own_accounts_views_only(own_vault: VaultProcess) -> None:
    _, reader_key = own_vault.new_account("Reader Co")
    _, other_key = own_vault.new_account("Other Co")
    mine, theirs = _burst(own_vault, reader_key, REQUESTS), _burst(own_vault, other_key, REQUESTS)
    with _client(own_vault, reader_key) as api:
        body = api.get(f"/views/{mine}/analytics").json()
    assert [p["views"] for p in body["pages"]] == [6] * PAGES
    assert _stored_views(own_vault, mine) == EXPECTED
    # Another account's pages still wait for their interval: a read is not a flush of all.
    assert sum(_stored_views(own_vault, theirs).values()) < len(REQUESTS)
    with _client(own_vault, other_key) as api:
        assert api.get(f"/views/{theirs}/analytics").status_code == 200
    assert _stored_views(own_vault, theirs) == EXPECTED


def test_pending_views_reach_the_database_without_a_read(vault: VaultProcess) -> None:
    _, key = vault.new_account("Timer Co")  # the shared vaultd: the default interval
    token = _burst(vault, key, REQUESTS)
    # The interval is 0.25 s; without the timer nothing is ever written. 30 s leaves room for
    # a session vaultd on a machine at a load of 20 or more (10 s once did not).
    assert wait_until(lambda: _stored_views(vault, token) == EXPECTED, timeout=30)


def test_a_clean_stop_writes_pending_views(own_vault: VaultProcess) -> None:
    _, key = own_vault.new_account("Stop Co")
    token = _burst(own_vault, key, REQUESTS)
    assert own_vault.stop() == 0  # at once: within the flush interval of the last pages
    own_vault.start()
    assert _stored_views(own_vault, token) == EXPECTED

"""A refused page request starts no render and writes nothing (services.pages.page_path).

The vaultd here has one render worker and no queue: a single render started for a refused
request would hold the worker for seconds (a slow page), and the legitimate page asked for
right after would get 503 "render queue is full". So the attack is made (many requests for a
heavy page with bad credentials) and its effect measured where a viewer would feel it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.access_log import page_entries
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.vault_process import VaultProcess, running_vault

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

INVALID_KEY = "invalid or revoked API key"
LINK_GONE = "link not found or no longer available"
ATTEMPTS = 8


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    data: Path = tmp_path_factory.mktemp("admission") / "data"
    # The heavy page's render may take its seconds many times over on a loaded host: its time
    # limit is not what this module checks.
    with running_vault(data, VAULTD_RENDER_WORKERS="1", VAULTD_RENDER_QUEUE_SIZE="0",
                       VAULTD_RENDER_TIMEOUT_SECONDS="120") as server:
        yield server


def wait_for_page_print(vault: VaultProcess, file_id: str, page: int) -> None:
    """Until the page's print is kept. The first time a page is sent, vaultd makes its print
    in the pool (services.tracing.page_prints): that task holds the one worker for a moment, and
    a page asked for meanwhile waits for it (tests/test_background_renders.py), which this
    module's checks should not have to tell from a render a refused request started."""
    async def kept(db: Any) -> bool:
        return await db.page_prints.find_one({"_id": f"{file_id}:{page}"}) is not None

    deadline = time.monotonic() + 60
    while not vault.run_service(kept):
        assert time.monotonic() < deadline, "the light page's print was never kept"
        time.sleep(0.1)


@dataclass(frozen=True)
class Files:
    key: str
    heavy_id: str  # a page that takes seconds to render
    heavy: dict  # a link to it
    light: dict  # a link to a page that renders at once


@pytest.fixture(scope="module")
def files(one_worker: VaultProcess) -> Files:
    _, key = one_worker.new_account("Admission Co")
    with one_worker.client(key) as api:
        heavy_id = upload_ok(api, docs.slow_pdf())["id"]
        heavy = create_link(api, heavy_id)
        light_id = upload_ok(api, docs.pdf(pages=2))["id"]
        light = create_link(api, light_id)
    one_worker.secrets += [key, heavy["token"], light["token"]]
    # Sent once now, so that no test's first look at it starts its print.
    assert_light_page_served_at_once(one_worker, key, light)
    wait_for_page_print(one_worker, light_id, 1)
    return Files(key, heavy_id, heavy, light)


def get_all(client: httpx.Client, paths: list[tuple[str, str | None]]) -> list[httpx.Response]:
    def one(item: tuple[str, str | None]) -> httpx.Response:
        path, key = item
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return client.get(path, headers=headers)

    with ThreadPoolExecutor(len(paths)) as threads:
        return list(threads.map(one, paths))


def assert_light_page_served_at_once(vault: VaultProcess, key: str, light: dict) -> None:
    with vault.client(key) as api:
        response = api.get(f"/views/{light['token']}/pages/1")
    assert response.status_code == 200, response.text  # 503 if a refused render held the worker
    assert response.headers["Content-Type"] == "image/jpeg"


def test_bad_keys_on_a_heavy_page_start_no_render_and_write_nothing(
    one_worker: VaultProcess, files: Files
) -> None:
    key, heavy, light = files.key, files.heavy, files.light
    revoked_account, revoked = one_worker.new_account("Revoked Ltd")
    revoked_key_id = one_worker.admin_json("keys", "list", revoked_account)[0]["id"]
    one_worker.admin("keys", "revoke", revoked_key_id)
    bad = ["sd_live_" + "A" * 43, revoked, "not-a-key"]  # unknown, revoked, malformed
    path = f"/views/{heavy['token']}/pages/1"
    with one_worker.client(key) as api:
        api.get(f"/views/{heavy['token']}")  # its records are now kept: the one-round-trip path
        answers = get_all(api, [(path, bad[i % len(bad)]) for i in range(ATTEMPTS)])
        for response in answers:
            assert_json_error(response, 401, INVALID_KEY)
        assert page_entries(api, files.heavy_id) == []
    assert_light_page_served_at_once(one_worker, key, light)


def test_another_accounts_key_on_a_heavy_page_starts_no_render(
    one_worker: VaultProcess, files: Files
) -> None:
    key, heavy, light = files.key, files.heavy, files.light
    _, other = one_worker.new_account("Snoop Inc")
    path = f"/views/{heavy['token']}/pages/1"
    with one_worker.client(key) as api:
        answers = get_all(api, [(path, other)] * ATTEMPTS)
        for response in answers:
            assert_json_error(response, 404, LINK_GONE)
        assert page_entries(api, files.heavy_id) == []
    assert_light_page_served_at_once(one_worker, key, light)


def test_a_revoked_viewer_link_starts_no_render_even_from_kept_records(
    one_worker: VaultProcess, files: Files
) -> None:
    key, light = files.key, files.light
    with one_worker.client(key) as api:
        heavy = create_link(api, files.heavy_id)
        one_worker.secrets.append(heavy["token"])
        viewer = httpx.Client(base_url=one_worker.url, timeout=60)
        with viewer:
            assert viewer.get(f"/v/{heavy['token']}").status_code == 200  # records now kept
            assert api.delete(f"/views/{heavy['token']}").status_code == 204
            answers = get_all(viewer, [(f"/v/{heavy['token']}/pages/1", None)] * ATTEMPTS)
        for response in answers:
            assert_json_error(response, 404, LINK_GONE)
    assert_light_page_served_at_once(one_worker, key, light)


def test_a_good_key_still_renders_the_heavy_page(
    one_worker: VaultProcess, files: Files
) -> None:
    key, heavy = files.key, files.heavy
    with one_worker.client(key) as api:
        response = api.get(f"/views/{heavy['token']}/pages/1")
        assert response.status_code == 200, response.text
        assert len(page_entries(api, files.heavy_id)) == 1

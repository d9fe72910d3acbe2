"""The server's own work in the render pool (a page's print, services.tracing.page_prints)
never takes a viewer's slot: it starts only on an idle worker, and a page asked for while it
runs waits for it, even on a vault with no render queue, where it would have got 503
(`RenderPool.submit`'s `background`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from render.pool.render_pool import PoolBusy, RenderPool
from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess, running_vault

pytestmark = pytest.mark.slow  # its own worker pool and its own vaultd (docs/testing.md)

PAGES = 6


@pytest.fixture
async def no_queue() -> AsyncIterator[RenderPool]:
    pool = RenderPool(workers=1, queue_size=0, timeout_seconds=20)
    await pool.wait_ready()
    yield pool
    await pool.close()


async def test_a_task_asked_for_while_background_work_runs_waits_for_it(
    no_queue: RenderPool,
) -> None:
    background = no_queue.submit(time.sleep, 0.4, background=True)
    await asyncio.sleep(0.05)  # on the worker
    assert not no_queue.idle_for_background()
    await no_queue.run(time.monotonic_ns)  # admitted (PoolBusy before), then run
    assert background.done()  # ahead of it, on the one worker
    assert no_queue.idle_for_background()


async def test_background_work_waits_for_an_idle_worker_and_takes_no_slot(
    no_queue: RenderPool,
) -> None:
    first = no_queue.submit(time.sleep, 0.4)
    assert not no_queue.idle_for_background()
    with pytest.raises(PoolBusy, match="no render worker is idle for background work"):
        no_queue.submit(time.sleep, 0, background=True)
    with pytest.raises(PoolBusy, match="all 1 render slots are taken"):  # as before
        no_queue.submit(time.sleep, 0)
    await first
    assert no_queue.in_flight == 0  # the refused ones left nothing behind


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    data: Path = tmp_path_factory.mktemp("background") / "data"
    with running_vault(data, VAULTD_RENDER_WORKERS="1", VAULTD_RENDER_QUEUE_SIZE="0") as server:
        yield server


def test_a_viewer_reading_page_after_page_never_meets_a_print(one_worker: VaultProcess) -> None:
    # Each page is sent here for the first time, so each starts its print on the one worker
    # as it leaves; the next is asked for at once.
    _, key = one_worker.new_account("Reader Co")
    with one_worker.client(key) as api:
        file_id = upload_ok(api, docs.pdf(pages=PAGES))["id"]
        link = create_link(api, file_id)
        one_worker.secrets += [key, link["token"]]
        answers = [api.get(f"/views/{link['token']}/pages/{page}")
                   for page in range(1, PAGES + 1)]
    assert [(answer.status_code, answer.text if answer.status_code != 200 else "")
            for answer in answers] == [(200, "")] * PAGES

    async def printed(db: Any) -> int:
        return await db.page_prints.count_documents({"fileId": file_id})

    deadline = time.monotonic() + 60  # every print made all the same, once a worker was idle
    while one_worker.run_service(printed) < PAGES:
        assert time.monotonic() < deadline, "a page's print was never kept"
        time.sleep(0.1)

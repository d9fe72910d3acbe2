"""A page of a stored document that a worker fails to render is the server's fault, never the
client's: the worker's error (here the one a worker meets when it may start no thread, as in a
container run without vaultd's seccomp profile) answers 503 with Retry-After for a page, while
the same error validating a fresh upload stays 422 (that file is the client's). Real workers."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from render.pool.render_pool import RenderPool
from tests import pool_helpers as helpers
from vaultd.errors import ServiceUnavailable, Unprocessable
from vaultd.services.common.pool_calls import start_task

# Its own worker pool (docs/testing.md)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="a worker's own uid needs root")]


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[RenderPool]:
    shared = RenderPool(workers=1, queue_size=2, timeout_seconds=20)
    yield shared
    await shared.close()


async def test_a_page_whose_worker_cannot_start_a_thread_is_503(pool: RenderPool) -> None:
    with pytest.raises(ServiceUnavailable) as refused:
        await start_task(pool, *helpers.task(helpers.start_a_thread_with_no_room))
    assert refused.value.status == 503
    assert refused.value.message == "the page could not be rendered; retry later"
    assert refused.value.retry_after > 0


async def test_the_same_failure_validating_an_upload_stays_422(pool: RenderPool) -> None:
    with pytest.raises(Unprocessable) as refused:
        await start_task(pool, *helpers.task(helpers.start_a_thread_with_no_room),
                         on_upload=True)
    assert refused.value.status == 422

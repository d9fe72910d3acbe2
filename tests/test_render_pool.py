"""RenderPool against real spawned worker processes: admission, timeouts, crashes, memory cap."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from render.pool.render_pool import PoolBusy, RenderPool, TaskTimedOut, WorkerCrashed
from render.wire.model import PixelBudget, Unreadable
from render.worker.entry_points import render_page, validate_document
from tests import pool_helpers as helpers
from tests import render_fixtures as fx
from tests.waiting import wait_until_async

# Its own worker pools (docs/testing.md); `alone`: its time bounds want the machine
pytestmark = [pytest.mark.slow, pytest.mark.alone]

GiB = 1 << 30


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[RenderPool]:
    # One pool for the module (spawning workers is the slow part); every test leaves it idle.
    shared = RenderPool(workers=2, queue_size=2, timeout_seconds=20, memory_limit_bytes=GiB)
    yield shared
    await shared.close()


async def test_a_page_renders_in_a_worker_and_errors_keep_their_type(
    pool: RenderPool, tmp_path: Path
) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF)
    document = fx.brokered(source)
    assert (await pool.run(validate_document, source, document=document)).page_count == 2
    jpeg = await pool.run(render_page, source, 2, fx.mark(), PixelBudget(), document=document)
    assert jpeg[:2] == b"\xff\xd8"
    assert document.reads  # the worker read the document through the broker
    locked = fx.encrypt_to_local(tmp_path, fx.encrypted_pdf(), fx.PDF)
    with pytest.raises(Unreadable, match="password-protected"):
        await pool.run(validate_document, locked, document=fx.brokered(locked))


async def test_a_deleted_document_fails_even_when_its_worker_has_it_cached(
    pool: RenderPool, tmp_path: Path
) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF)
    document = fx.brokered(source)
    await pool.run(render_page, source, 1, fx.mark(), PixelBudget(), document=document)
    reads = len(document.reads)
    fx.blob_path(source).unlink()
    for _ in range(2):  # whichever worker takes it, cached or not
        with pytest.raises(FileNotFoundError):
            await pool.run(render_page, source, 2, fx.mark(), PixelBudget(),
                           document=fx.brokered(source))
    assert len(document.reads) == reads


async def test_a_full_queue_answers_pool_busy_at_once(pool: RenderPool) -> None:
    running = [asyncio.ensure_future(pool.run(*helpers.task(helpers.sleep_for, 0.5)))
               for _ in range(4)]
    await wait_until_async(lambda: pool.in_flight == 4)
    started = time.monotonic()
    with pytest.raises(PoolBusy):
        await pool.run(*helpers.task(helpers.pid))
    assert time.monotonic() - started < 0.1
    await asyncio.gather(*running)
    assert pool.in_flight == 0


async def test_a_hung_task_is_killed_at_its_timeout_and_the_next_task_runs(
    pool: RenderPool,
) -> None:
    started = time.monotonic()
    with pytest.raises(TaskTimedOut):
        await pool.run(*helpers.task(helpers.sleep_for, 60), timeout=1.0)
    assert time.monotonic() - started < 5
    assert await pool.run(*helpers.task(helpers.pid)) in pool.worker_pids()


async def test_a_workers_own_timeout_error_is_not_a_task_timeout(pool: RenderPool) -> None:
    with pytest.raises(TimeoutError, match="storage read timed out"):
        await pool.run(*helpers.task(helpers.raise_timeout_error))


async def test_a_worker_killed_mid_task_fails_only_that_task() -> None:
    # One worker, so the busy one is known (a confined worker cannot write a marker file).
    single = RenderPool(workers=1, queue_size=1, timeout_seconds=20)
    try:
        victim = await single.run(*helpers.task(helpers.pid))
        task = asyncio.ensure_future(single.run(*helpers.task(helpers.sleep_for, 60)))
        await wait_until_async(lambda: single.in_flight == 1)  # handed to the one ready worker
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(WorkerCrashed):
            await task
        assert await single.run(*helpers.task(helpers.pid)) != victim
    finally:
        await single.close()


async def test_a_segfault_fails_only_that_task(pool: RenderPool) -> None:
    with pytest.raises(WorkerCrashed, match="-11"):
        await pool.run(*helpers.task(helpers.segfault))
    assert isinstance(await pool.run(*helpers.task(helpers.pid)), int)


async def test_an_idle_worker_killed_does_not_break_the_pool(pool: RenderPool) -> None:
    await wait_until_async(lambda: len(pool.worker_pids()) == 2)
    victim = pool.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    # The pool notices the exit and starts a replacement.
    await wait_until_async(lambda: victim not in pool.worker_pids()
                           and len(pool.worker_pids()) == 2, what="a replacement worker")
    assert await pool.run(*helpers.task(helpers.pid)) != victim


async def test_an_unknown_exception_comes_back_as_a_runtime_error_with_its_name(
    pool: RenderPool,
) -> None:
    # Errors cross as a code and a short text, never pickled: the class is the server's choice.
    with pytest.raises(RuntimeError, match="TwoArgError: a/b"):
        await pool.run(*helpers.task(helpers.raise_unpicklable))
    assert isinstance(await pool.run(*helpers.task(helpers.pid)), int)


async def test_an_allocation_over_the_memory_cap_is_a_clean_memory_error(
    pool: RenderPool,
) -> None:
    worker = await pool.run(*helpers.task(helpers.pid))
    with pytest.raises(MemoryError):
        await pool.run(*helpers.task(helpers.allocate, 2 * GiB))
    assert await pool.run(*helpers.task(helpers.allocate, 16 << 20)) == 16 << 20
    assert worker in pool.worker_pids()  # no crash, no respawn


async def test_workers_are_recycled_after_max_tasks() -> None:
    small = RenderPool(workers=1, queue_size=0, max_tasks_per_worker=2)
    try:
        pids = [await small.run(*helpers.task(helpers.pid)) for _ in range(5)]
    finally:
        await small.close()
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]


async def test_max_tasks_zero_never_recycles() -> None:
    # 0 is the documented "never" (render.max_tasks_per_worker), not "after every task".
    unlimited = RenderPool(workers=1, queue_size=0, max_tasks_per_worker=0)
    try:
        pids = {await unlimited.run(*helpers.task(helpers.pid)) for _ in range(5)}
    finally:
        await unlimited.close()
    assert len(pids) == 1


async def test_recycled_workers_leave_no_file_descriptor_behind() -> None:
    small = RenderPool(workers=1, queue_size=0, max_tasks_per_worker=1)
    try:
        await small.run(*helpers.task(helpers.pid))
        await wait_until_async(lambda: len(small.worker_pids()) == 1)
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(10):
            await small.run(*helpers.task(helpers.pid))
        # The last retired worker is reaped asynchronously.
        await wait_until_async(lambda: len(os.listdir("/proc/self/fd")) <= before, timeout=10,
                               what="the retired workers' descriptors closed")
    finally:
        await small.close()


async def test_close_returns_promptly_with_a_task_running(tmp_path: Path) -> None:
    closing = RenderPool(workers=1, queue_size=1)
    hung = asyncio.ensure_future(closing.run(*helpers.task(helpers.sleep_for, 60)))
    await wait_until_async(lambda: closing.in_flight == 1)  # handed to its worker
    started = time.monotonic()
    await closing.close()
    assert time.monotonic() - started < 5
    with pytest.raises(PoolBusy):
        await hung
    with pytest.raises(PoolBusy):
        await closing.run(*helpers.task(helpers.pid))
    assert closing.worker_pids() == []


async def test_a_busy_worker_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    # An idle worker exits when its task pipe closes; a busy one gets SIGKILL from the kernel
    # rather than finishing a render nobody will read.
    marker = tmp_path / "pid"
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER_SCRIPT, str(marker), cwd=Path(__file__).parents[1])
    try:
        await wait_until_async(lambda: marker.exists() and marker.read_text(), timeout=30)
        worker = int(marker.read_text())
        owner.kill()
        await owner.wait()
        await wait_until_async(lambda: not _running(worker), timeout=10)
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()


OWNER_SCRIPT = """
import asyncio, sys
from render.pool.render_pool import RenderPool
from tests import pool_helpers

async def main():
    pool = RenderPool(workers=1, queue_size=0)
    await pool.wait_ready()
    with open(sys.argv[1], "w") as marker:
        marker.write(str(pool.worker_pids()[0]))
    await pool.run(*pool_helpers.task(pool_helpers.sleep_for, 120))

asyncio.run(main())
"""


def _running(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


async def test_a_worker_serves_one_account_and_is_replaced_to_serve_another() -> None:
    single = RenderPool(workers=1, queue_size=2)
    try:
        first = await single.run(*helpers.task(helpers.pid), account="acct-a")
        assert await single.run(*helpers.task(helpers.pid), account="acct-a") == first
        other = await single.run(*helpers.task(helpers.pid), account="acct-b")
        assert other != first and first not in single.worker_pids()
        back = await single.run(*helpers.task(helpers.pid), account="acct-a")
        assert back not in (first, other)  # acct-b's worker is not reused for acct-a either
        assert len(single.switch_seconds) == 2
    finally:
        await single.close()


async def test_two_accounts_on_two_workers_keep_their_workers() -> None:
    pair = RenderPool(workers=2, queue_size=2)
    try:
        await pair.wait_ready()
        seen = {"a": set(), "b": set()}  # type: dict[str, set[int]]
        for _ in range(3):
            for account in ("a", "b"):
                seen[account].add(await pair.run(*helpers.task(helpers.pid), account=account))
        assert len(seen["a"]) == len(seen["b"]) == 1 and not seen["a"] & seen["b"]
        assert pair.switch_seconds == []
    finally:
        await pair.close()


async def test_a_worker_keeps_the_zygotes_objects_out_of_the_collectors_passes(
    pool: RenderPool,
) -> None:
    # A full pass over the rendering libraries' objects would stop a render for tens of ms and
    # copy the zygote's shared pages into the worker (render.worker.serve): frozen at its start.
    assert await pool.run(gc.get_freeze_count) > 30_000

"""The render pool's fair queue with real confined workers: what HTTP cannot observe directly.

The order tasks run in (round-robin per link within an account), the turns an account loses
after a render of its timed out, and the pool's counts of dropped and completed tasks.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from render.pool.fair_queue import ClientBusy, FairQueueLimits, LinkBusy
from render.pool.render_pool import RenderPool, TaskTimedOut
from tests import pool_helpers as helpers
from tests.waiting import wait_until_async

pytestmark = pytest.mark.slow  # spawns its own worker pools (see docs/testing.md)


def one_worker(**limits: int) -> RenderPool:
    return RenderPool(workers=1, queue_size=16, timeout_seconds=20,
                      fairness=FairQueueLimits(max_per_link=16, **limits))


async def finishing_order(pool: RenderPool, tasks: list[tuple[str, dict[str, str]]]) -> list[str]:
    """Queue quick tasks (name, submit keywords) behind a blocker; the order they end in."""
    ended: list[str] = []
    blocker = pool.submit(*helpers.task(helpers.sleep_for, 0.5), account="blocker")
    await wait_until_async(lambda: pool.scheduler.queue.running == 1, what="the blocker running")
    pending = []
    for name, where in tasks:
        future = pool.submit(*helpers.task(helpers.pid), **where)  # type: ignore[arg-type]
        future.add_done_callback(lambda _, name=name: ended.append(name))
        pending.append(future)
    await blocker
    await asyncio.gather(*pending)
    return ended


async def test_links_of_one_account_take_turns() -> None:
    pool = one_worker()
    try:
        await pool.wait_ready()
        burst = [(f"burst{n}", {"account": "a", "link": "busy"}) for n in range(4)]
        order = await finishing_order(pool, [*burst, ("other", {"account": "a", "link": "calm"})])
        # FIFO would end "other" last; taking turns, it goes second.
        assert order == ["burst0", "other", "burst1", "burst2", "burst3"]
    finally:
        await pool.close()


async def test_an_account_whose_render_timed_out_loses_turns() -> None:
    pool = one_worker(timeout_penalty=3)
    try:
        await pool.wait_ready()
        with pytest.raises(TaskTimedOut):
            await pool.run(*helpers.task(helpers.sleep_for, 60), account="slow", timeout=0.5)
        assert pool.scheduler.queue.debt("slow") == 3
        tasks = [("slow", {"account": "slow"}),
                 *((f"other{n}", {"account": f"other{n}"}) for n in range(3))]
        order = await finishing_order(pool, tasks)
        # Queued first, yet passed over while the three others wait (one turn of debt each).
        assert order == ["other0", "other1", "other2", "slow"]
        assert pool.scheduler.queue.debt("slow") < 3  # turns paid as it was passed over
    finally:
        await pool.close()


async def test_a_cancelled_waiting_task_never_runs_and_a_running_one_finishes() -> None:
    pool = one_worker()
    try:
        await pool.wait_ready()
        running = pool.submit(*helpers.task(helpers.sleep_for, 0.5), account="a")
        await wait_until_async(lambda: pool.scheduler.queue.running == 1)
        waiting = pool.submit(*helpers.task(helpers.sleep_for, 5), account="a")
        before = pool.scheduler.completed
        started = time.monotonic()
        waiting.cancel()
        running.cancel()  # already on a worker: it runs to the end, its result dropped
        await wait_until_async(lambda: pool.scheduler.dropped == 1)  # done callbacks: soon
        assert pool.in_flight == 1
        assert isinstance(await pool.run(*helpers.task(helpers.pid), account="a"), int)
        assert time.monotonic() - started < 4  # not behind the cancelled 5 s task
        assert pool.scheduler.completed == before + 2  # the running one and this one only
        assert pool.in_flight == 0
    finally:
        await pool.close()


async def test_caps_bound_the_waiting_tasks_refuse_at_once_and_leave_nothing_queued() -> None:
    pool = RenderPool(workers=1, queue_size=16, timeout_seconds=20,
                      fairness=FairQueueLimits(max_per_link=2, max_per_ip=3))
    try:
        await pool.wait_ready()
        # One running and two waiting: the running one does not count against the cap.
        held = [pool.submit(*helpers.task(helpers.sleep_for, 1.0), account="a", link="l",
                            ip="198.51.100.1") for _ in range(3)]
        assert pool.scheduler.queue.running == 1 and pool.scheduler.queue.queued == 2
        with pytest.raises(LinkBusy, match="too many pages of this link"):
            pool.submit(*helpers.task(helpers.pid), account="a", link="l", ip="198.51.100.2")
        held.append(pool.submit(*helpers.task(helpers.pid), account="a", link="m",
                                ip="198.51.100.1"))
        with pytest.raises(ClientBusy, match="too many pages requested at once"):
            pool.submit(*helpers.task(helpers.pid), account="a", link="n", ip="198.51.100.1")
        # Counted within the account: another tenant naming the same viewer IP is not refused.
        held.append(pool.submit(*helpers.task(helpers.pid), account="b", link="o",
                                ip="198.51.100.1"))
        assert pool.in_flight == 5
        await asyncio.gather(*held)
        assert pool.in_flight == 0
    finally:
        await pool.close()

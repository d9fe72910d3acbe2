"""`services.common.periodic.Periodic`, the loop the webhook deliverer and the notification
sender run in: rounds an interval apart, a stop that cuts the wait short, the stop's own round
(the deliverer's flush) and a flush deadline that cuts a slow round."""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise

from tests.waiting import wait_until_async
from vaultd.services.common.periodic import Periodic


async def test_rounds_follow_each_other_and_a_stop_cuts_the_wait_short() -> None:
    rounds: list[float] = []

    async def count() -> None:
        rounds.append(time.monotonic())

    loop = Periodic(count, interval=0.05)
    loop.start()
    await wait_until_async(lambda: len(rounds) >= 3, timeout=10, what="three rounds")
    assert all(b - a >= 0.04 for a, b in pairwise(rounds))
    long_wait = Periodic(count, interval=3600)
    long_wait.start()
    await wait_until_async(lambda: len(rounds) >= 4, timeout=10, what="the first round")
    started = time.monotonic()
    assert await long_wait.stop(flush_seconds=30) is True  # the hour's wait ends at once
    assert time.monotonic() - started < 5
    await loop.stop()
    stopped_at = len(rounds)
    for _ in range(20):
        await asyncio.sleep(0)  # turns of the event loop in which a live loop could go on
    assert len(rounds) == stopped_at


async def test_the_stops_round_runs_when_asked_and_a_slow_one_is_cut() -> None:
    rounds: list[str] = []
    release = asyncio.Event()

    async def flush() -> None:
        rounds.append("round")
        if len(rounds) > 1:
            await release.wait()  # the stop's round hangs until the flush deadline

    loop = Periodic(flush, interval=3600, round_at_stop=True)
    loop.start()
    await wait_until_async(lambda: rounds == ["round"], timeout=10, what="the first round")
    assert await loop.stop(flush_seconds=0.2) is False  # the stop's round ran and was cut
    assert rounds == ["round", "round"]
    assert not release.is_set()

    quick: list[str] = []

    async def note() -> None:
        quick.append("round")

    flushed = Periodic(note, interval=3600, round_at_stop=True)
    flushed.start()
    await wait_until_async(lambda: quick == ["round"], timeout=10, what="the first round")
    assert await flushed.stop(flush_seconds=30) is True
    assert quick == ["round", "round"]
    without = Periodic(note, interval=3600)
    without.start()
    await wait_until_async(lambda: len(quick) == 3, timeout=10, what="the first round")
    assert await without.stop(flush_seconds=30) is True
    assert len(quick) == 3  # no round at the stop unless asked for


async def test_a_loop_never_started_stops_at_once() -> None:
    async def never() -> None:
        raise AssertionError("not started: no round")

    assert await Periodic(never, interval=1).stop(flush_seconds=5) is True


async def test_a_wake_runs_the_next_round_at_once_and_one_during_a_round_runs_another() -> None:
    rounds: list[str] = []
    inside = asyncio.Event()
    go_on = asyncio.Event()

    async def work() -> None:
        rounds.append("round")
        if len(rounds) == 2:  # the woken round: wake it again while it runs
            inside.set()
            await go_on.wait()

    loop = Periodic(work, interval=3600)
    loop.start()
    await wait_until_async(lambda: rounds == ["round"], timeout=10, what="the first round")
    loop.wake()  # an hour's wait, cut short
    await asyncio.wait_for(inside.wait(), 5)
    loop.wake()  # during the round: the next one runs right after it
    go_on.set()
    await wait_until_async(lambda: len(rounds) == 3, timeout=5, what="the round after the wake")
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(rounds) == 3  # woken once, ran once: the hour's wait is back
    assert await loop.stop(flush_seconds=5) is True

"""A round of background work run again and again in every vaultd process, until it stops.

The webhook deliverer and the notification sender are such loops: a round, then a wait of
`interval` seconds that a stop or a `wake` cuts short. A round must not raise (it logs what
went wrong and the next one retries); being cancelled is how a stop ends one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

RECANCEL_SECONDS = 1.0  # how long a cancelled task may run on before it is cancelled again


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait until it has ended, cancelling it again while it runs on: Python
    3.11's `asyncio.wait_for`, which the database driver awaits inside every command, can swallow
    a cancellation that lands as its operation completes, and a loop that swallowed its one
    cancellation would otherwise run on (and its stop wait) for ever. What the task raised
    other than its cancellation is raised here."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
    with contextlib.suppress(asyncio.CancelledError):
        await task


class Periodic:
    def __init__(self, round_: Callable[[], Awaitable[object]], interval: float, *,
                 round_at_stop: bool = False) -> None:
        """`round_at_stop`: once a stop is asked for, one more round (what the last requests
        left due), cut short when the stop's `flush_seconds` run out."""
        self._round, self._interval, self._round_at_stop = round_, interval, round_at_stop
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._woken = asyncio.Event()

    def wake(self) -> None:
        """Run the next round now (at once if none is under way, else right after it): work
        this process made due need not wait for the interval. Call on the loop's thread."""
        self._woken.set()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self, flush_seconds: float = 0.0) -> bool:
        """Stop, letting the round under way (and the stop's round) run for up to
        `flush_seconds`; False when that cut one short."""
        if self._task is None:
            return True
        self._stopping.set()
        self._woken.set()
        done, _ = await asyncio.wait({self._task}, timeout=max(flush_seconds, 0.0))
        with contextlib.suppress(Exception):  # a round logs its own failures
            await cancel_and_wait(self._task)
        return bool(done)

    async def _run(self) -> None:
        while not self._stopping.is_set():
            self._woken.clear()  # a wake during the round runs the next one at once
            await self._round()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), self._interval)
        if self._round_at_stop:
            await self._round()

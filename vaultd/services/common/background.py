"""Work a call starts and does not wait for: the bounded steps that follow a one-write answer
(a revoke-all's marking, a deletion's clean-up).

Each piece of such work is recorded in the database before it is started here, so these tasks
hold nothing that matters: a process that stops cancels them (`stop`), and recovery (another
process's, or the next start's) resumes their records once this process is gone. They are kept
in one set so that they are not collected mid-way, and so that tests and the stop can wait for
them or cut them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from vaultd.db_deadline import detached

log = logging.getLogger("vaultd.background")

# A step that took longer than this is near the 50 ms bar no database operation may pass
# (other tenants' requests wait behind it): the next ones are made smaller.
SLOW_STEP_SECONDS = 0.025
QUICK_STEPS_TO_GROW = 5  # steps in a row under it before the size grows by one again

_running: set[asyncio.Task[Any]] = set()


@dataclass
class StepSize:
    """How many records the next step writes: `most` at first, halved after a step slower than
    `SLOW_STEP_SECONDS` (a checkpoint, a burst of other work: what slows one step slows the
    next), one more again after `QUICK_STEPS_TO_GROW` steps in a row under it; never below 1
    nor above `most`. A step's time is the database's where it says it
    (`vaultd.db_server_time.step_seconds`), not a loaded machine's wait for a CPU."""

    most: int
    size: int = 0
    quick: int = 0  # steps in a row under the slow mark

    def __post_init__(self) -> None:
        self.most = max(1, self.most)
        self.size = min(self.size or self.most, self.most)

    def took(self, seconds: float) -> None:
        if seconds > SLOW_STEP_SECONDS:
            self.size, self.quick = max(1, self.size // 2), 0
            return
        self.quick += 1
        if self.quick >= QUICK_STEPS_TO_GROW and self.size < self.most:
            self.size, self.quick = self.size + 1, 0


def spawn(work: Coroutine[Any, Any, Any], what: str) -> None:
    """Run `work` beside the caller; `what` names it in the log if it fails."""
    task = detached(work)  # it outlives the request that started it, and its deadline
    _running.add(task)
    task.add_done_callback(lambda done: _finished(done, what))


async def settle_then_clean_up(key: str, cleaning: set[str], settle: Awaitable[None],
                               clean_up: Callable[[], Coroutine[Any, Any, Any]],
                               what: str) -> None:
    """A claimed deletion's answer: await `settle`, then run `clean_up()` in the background.
    `key` (already added by the claimer) stays in `cleaning`, the set recovery skips, until
    either stops: recovery never cleans up what this process is still cleaning."""
    try:
        await settle
    except BaseException:
        cleaning.discard(key)
        raise

    async def run() -> None:
        try:
            await clean_up()
        finally:
            cleaning.discard(key)

    spawn(run(), what)


def _finished(task: asyncio.Task[Any], what: str) -> None:
    _running.discard(task)
    if not task.cancelled() and task.exception() is not None:
        # Its record stays: recovery finishes it once this process is gone.
        log.error("%s failed: %s", what, type(task.exception()).__name__)


def stop() -> None:
    """Cancel this process's background work (its records stay for recovery): the work of the
    calling event loop, the one vaultd serves from (the in-process test harness runs several
    vaultd in one process, each on a loop of its own)."""
    for task in _of_this_loop():
        task.cancel()


async def settled() -> None:
    """Wait until this process's background work (the calling loop's) is done."""
    while waiting := _of_this_loop():
        await asyncio.gather(*waiting, return_exceptions=True)


def _of_this_loop() -> list[asyncio.Task[Any]]:
    loop = asyncio.get_running_loop()
    return [task for task in list(_running) if task.get_loop() is loop]

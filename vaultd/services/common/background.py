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
from typing import Any

log = logging.getLogger("vaultd.background")

_running: set[asyncio.Task[Any]] = set()


def spawn(work: Coroutine[Any, Any, Any], what: str) -> None:
    """Run `work` beside the caller; `what` names it in the log if it fails."""
    task = asyncio.ensure_future(work)
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

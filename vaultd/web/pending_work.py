"""Work a request leaves running once its connection is gone, which a graceful stop waits for.

An upload whose connection is cut (its client left, its body went idle, or the stop's grace ran
out) removes its temporary blob in a task of its own; an upload whose body is all in goes on
to be stored even if its client leaves. Both run here, so the stop (`vaultd.shutdown`) can wait
for them before it closes the render pool, the storage backend and the database under them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from vaultd.db_deadline import detached

log = logging.getLogger("vaultd.web")

T = TypeVar("T")


class PendingWork:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def run(self, work: Awaitable[T]) -> asyncio.Future[T]:
        """Start `work` as a task the stop waits for; the caller awaits it for its outcome."""
        return self._kept(asyncio.ensure_future(work))

    def spawn(self, work: Coroutine[Any, Any, object], what: str) -> None:
        """Start `work` that nobody awaits, outside the request's deadline (it outlives the
        request); its failure is logged, naming `what` it was."""
        self._kept(detached(work)).add_done_callback(lambda task: _log_failure(task, what))

    def _kept(self, task: asyncio.Future[T]) -> asyncio.Future[T]:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait(self, deadline: float) -> int:
        """Wait until nothing is pending or the loop's clock reaches `deadline`; returns how
        many tasks are still running (work started while waiting is waited for too)."""
        loop = asyncio.get_running_loop()
        while self._tasks and loop.time() < deadline:
            await asyncio.wait(set(self._tasks), timeout=deadline - loop.time())
        return len(self._tasks)


def _log_failure(task: asyncio.Future[object], what: str) -> None:
    error = None if task.cancelled() else task.exception()
    if error is not None:
        log.error("%s failed", what, exc_info=error)

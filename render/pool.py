"""The render process pool, awaitable from the Tornado event loop.

Why pebble and not `concurrent.futures.ProcessPoolExecutor`: when one stdlib worker dies (a
segfault in PDFium, a SIGKILL from the OOM killer) the executor marks itself broken and fails
every pending and future task, and a task that runs too long cannot be stopped: `Future.cancel`
does nothing once it started, so a hostile PDF could pin a worker forever. pebble kills a task's
worker at its timeout and replaces it, reports a dead worker as that task's failure only, and
recycles workers after `max_tasks`, which bounds leaks in native code.

Workers are started with "spawn": a fresh interpreter per worker, nothing inherited from the
server (no open sockets, no keys in memory, no half-held locks from other threads).

Admission is decided here, not in pebble: at most `workers + queue_size` tasks are in flight, and
the next one gets PoolBusy at once (the server answers 503 with Retry-After) instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from render.tasks import worker_init

T = TypeVar("T")

# close() waits this long for pebble to stop its workers (it gives each 3 s after SIGTERM),
# then kills whatever is left.
_JOIN_SECONDS = 8.0


class PoolBusy(Exception):
    """Every worker is busy and the queue is full (or the pool is shutting down): 503."""


class TaskTimedOut(Exception):
    """The task outlived its timeout; its worker was killed and replaced: 503."""


class WorkerCrashed(Exception):
    """The worker died under the task (segfault, SIGKILL, OOM kill). Only this request fails."""


class RenderPool:
    """A bounded pool of render worker processes."""

    def __init__(
        self,
        workers: int,
        queue_size: int,
        timeout_seconds: float = 30.0,
        max_tasks_per_worker: int = 200,
        memory_limit_bytes: int = 2 << 30,
    ) -> None:
        self._workers = workers
        self._capacity = workers + queue_size
        self._timeout = timeout_seconds
        self._max_tasks = max_tasks_per_worker
        self._memory_limit = memory_limit_bytes
        self._pending: dict[Future[Any], asyncio.Future[Any]] = {}
        self._retired: list[ProcessPool] = []
        self._closed = False
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPool:
        pool = ProcessPool(
            max_workers=self._workers,
            max_tasks=self._max_tasks,
            initializer=worker_init,
            initargs=(self._memory_limit,),
            context=multiprocessing.get_context("spawn"),
        )
        pool.active  # noqa: B018 - starts the workers now rather than on the first request
        return pool

    @property
    def in_flight(self) -> int:
        """Tasks queued or running, including those whose caller has gone away."""
        return len(self._pending)

    def worker_pids(self) -> list[int]:
        """Best effort (pebble internals), for tests and diagnostics."""
        return [pid for pid, _ in _workers(self._pool)]

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """Run `fn(*args)` in a worker and return its result.

        Raises PoolBusy, TaskTimedOut, WorkerCrashed, or the task's own exception.
        """
        return await self.submit(fn, *args, timeout=timeout)

    def submit(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None
    ) -> asyncio.Future[T]:
        """Schedule `fn(*args)` now and return its future; PoolBusy at once if no slot is free.

        Cancelling the future drops a queued task; a running one is left to finish: cancelling
        it would kill its worker, and a respawn costs more than the rest of the render.
        """
        if self._closed:
            raise PoolBusy("the render pool is shutting down")
        if self.in_flight >= self._capacity:
            raise PoolBusy(f"all {self._capacity} render slots are taken")
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[T] = loop.create_future()
        task = self._schedule(fn, args, self._timeout if timeout is None else timeout)
        self._pending[task] = outcome
        task.add_done_callback(functools.partial(self._on_done, loop))
        outcome.add_done_callback(functools.partial(_drop_if_cancelled, task))
        return outcome

    def _schedule(self, fn: Callable[..., T], args: tuple[Any, ...], timeout: float) -> Future[T]:
        if not self._pool.active:
            # pebble gives up on the whole pool when a worker dies while no task is running
            # (it takes that for a failing initializer); start a fresh one.
            self._replace_pool()
        return self._pool.schedule(fn, args=args, timeout=timeout)

    def _replace_pool(self) -> None:
        old, self._pool = self._pool, self._new_pool()
        old.stop()
        self._retired.append(old)
        threading.Thread(target=old.join, name="render-pool-join", daemon=True).start()

    def _on_done(self, loop: asyncio.AbstractEventLoop, task: Future[Any]) -> None:
        # Runs in a pebble thread: hand over to the event loop (unless it is closed: then
        # nobody is waiting any more).
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._settle, task)

    def _settle(self, task: Future[Any]) -> None:
        outcome = self._pending.pop(task, None)
        if outcome is None or outcome.done():
            return
        if task.cancelled():
            outcome.cancel()
        elif task.exception() is None:
            outcome.set_result(task.result())
        else:
            outcome.set_exception(_translate(task.exception()))

    async def close(self) -> None:
        """Stop every worker (running tasks are abandoned) and wait, boundedly, for them."""
        if self._closed:
            return
        self._closed = True
        for outcome in self._pending.values():
            if not outcome.done():
                outcome.set_exception(PoolBusy("the render pool is shutting down"))
        processes = self._worker_processes()
        self._pool.stop()
        joiner = threading.Thread(target=self._pool.join, name="render-pool-join", daemon=True)
        joiner.start()
        if not await _wait_for_thread(joiner, _JOIN_SECONDS):
            for process in processes:
                process.kill()
            await _wait_for_thread(joiner, 2.0)

    def _worker_processes(self) -> list[BaseProcess]:
        pools = (self._pool, *self._retired)
        return [process for pool in pools for _, process in _workers(pool)]


def _drop_if_cancelled(task: Future[Any], outcome: asyncio.Future[Any]) -> None:
    if outcome.cancelled() and not task.running():
        task.cancel()


def _workers(pool: ProcessPool) -> list[tuple[int, BaseProcess]]:
    """pebble's live worker table (pid -> process); internal, so looked up defensively."""
    try:
        table = pool._pool_manager.worker_manager.workers
    except AttributeError:
        return []
    while True:
        try:
            return list(table.items())
        except RuntimeError:
            continue  # a pebble thread changed the table mid-copy; copy again


def _translate(exc: BaseException | None) -> BaseException:
    assert exc is not None
    # pebble attaches the worker's traceback to exceptions raised by the task itself; its own
    # TimeoutError has none, so a task's socket timeout is not mistaken for a render timeout.
    remote = hasattr(exc, "traceback")
    translated: BaseException
    if isinstance(exc, TimeoutError) and not remote:
        translated = TaskTimedOut("the render took too long; its worker was replaced")
    elif isinstance(exc, ProcessExpired) and not remote:
        translated = WorkerCrashed(f"the render worker died (exit code {exc.exitcode})")
    elif isinstance(exc, BrokenProcessPool):
        translated = WorkerCrashed("the render pool broke; it is being restarted")
    else:
        return exc
    translated.__cause__ = exc
    return translated


async def _wait_for_thread(thread: threading.Thread, seconds: float) -> bool:
    # Polled rather than asyncio.to_thread: a join stuck past its budget must not hold up the
    # event loop's executor shutdown.
    deadline = time.monotonic() + seconds
    while thread.is_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not thread.is_alive()


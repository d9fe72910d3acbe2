"""The render process pool, awaitable from the Tornado event loop.

Why not `concurrent.futures.ProcessPoolExecutor`: when one stdlib worker dies (a segfault in
PDFium, a SIGKILL from the OOM killer) the executor marks itself broken and fails every pending
and future task, and a task that runs too long cannot be stopped. Why not pebble, which has the
right semantics and was used first: every task crossed two of its threads each way (a scheduler
and a result reader, both contending for the GIL with the event loop) and one pipe shared by all
workers under a lock, about 2.5 ms of hand-overs on a page that renders in 20.

Here each worker has its own two pipes, written and read by the event loop itself (`add_reader`,
no thread). A worker says once that it is ready (its imports done), then each task costs one
message each way; a task's timeout starts when it is handed to a ready worker, and at the
timeout the worker is killed and replaced. A worker that dies fails its own task only
(WorkerCrashed) and is replaced; workers are also replaced after `max_tasks_per_worker` tasks,
which bounds leaks in native code.
Workers are started with "spawn" (a fresh interpreter: no sockets, keys or half-held locks of
the server), capped in address space, and get SIGKILL from the kernel if vaultd dies.

Admission is decided here: at most `workers + queue_size` tasks are in flight, and the next one
gets PoolBusy at once (the server answers 503 with Retry-After) instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import logging
import multiprocessing
import os
import pickle
import signal
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from render.tasks import worker_init

T = TypeVar("T")
log = logging.getLogger("vaultd.render")

# close() gives workers this long to exit after SIGTERM, then kills whatever is left.
_STOP_SECONDS = 3.0
_READY = b""  # a worker's note, once, that it can take tasks
_PR_SET_PDEATHSIG = 1
_PIPE_BYTES = 1 << 20


class PoolBusy(Exception):
    """Every worker is busy and the queue is full (or the pool is shutting down): 503."""


class TaskTimedOut(Exception):
    """The task outlived its timeout; its worker was killed and replaced: 503."""


class WorkerCrashed(Exception):
    """The worker died under the task (segfault, SIGKILL, OOM kill). Only this request fails."""


@dataclass(eq=False)
class _Task:
    payload: bytes
    timeout: float
    outcome: asyncio.Future[Any]
    timer: asyncio.TimerHandle | None = None


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    tasks: Connection  # the parent's end: tasks go out
    results: Connection  # the parent's end: the "ready" note and results come in
    task: _Task | None = None
    done: int = 0
    ready: bool = False
    retiring: bool = False
    inbox: bytearray = field(default_factory=bytearray)

    @property
    def idle(self) -> bool:
        return self.ready and self.task is None and not self.retiring


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
        self._size = workers
        self._capacity = workers + queue_size
        self._timeout = timeout_seconds
        self._max_tasks = max_tasks_per_worker
        self._memory_limit = memory_limit_bytes
        self._context = multiprocessing.get_context("spawn")
        self._queue: deque[_Task] = deque()
        self._workers: list[_Worker] = []
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        with contextlib.suppress(RuntimeError):  # started now when built inside the event loop
            self._start_workers()

    @property
    def in_flight(self) -> int:
        """Tasks queued or running, including those whose caller has gone away."""
        return len(self._queue) + sum(1 for worker in self._workers if worker.task is not None)

    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w.process.pid and not w.retiring]

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """Run `fn(*args)` in a worker and return its result.

        Raises PoolBusy, TaskTimedOut, WorkerCrashed, or the task's own exception.
        """
        return await self.submit(fn, *args, timeout=timeout)

    def submit(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None
    ) -> asyncio.Future[T]:
        """Schedule `fn(*args)` now and return its future; PoolBusy at once if no slot is free.

        Cancelling the future drops a queued task; a running one is left to finish: killing its
        worker would cost a respawn, more than the rest of the render.
        """
        if self._closed:
            raise PoolBusy("the render pool is shutting down")
        if self.in_flight >= self._capacity:
            raise PoolBusy(f"all {self._capacity} render slots are taken")
        self._start_workers()
        if not self._workers:
            raise PoolBusy("no render worker could be started")
        assert self._loop is not None
        outcome: asyncio.Future[T] = self._loop.create_future()
        payload = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        task = _Task(payload, self._timeout if timeout is None else timeout, outcome)
        outcome.add_done_callback(lambda _: self._drop_if_queued(task))
        self._queue.append(task)
        self._dispatch()
        return outcome

    async def close(self) -> None:
        """Stop every worker (running tasks are abandoned) and wait, boundedly, for them."""
        if self._closed:
            return
        self._closed = True
        for task in [*self._queue, *(w.task for w in self._workers if w.task)]:
            _settle(task, error=PoolBusy("the render pool is shutting down"))
        self._queue.clear()
        workers, self._workers = self._workers, []
        for worker in workers:
            self._detach(worker)
            with contextlib.suppress(OSError):
                worker.process.terminate()
        deadline = time.monotonic() + _STOP_SECONDS
        while any(w.process.is_alive() for w in workers) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for worker in workers:
            if worker.process.is_alive():
                worker.process.kill()
            worker.process.join(1.0)
            _release(worker)

    # --- workers ----------------------------------------------------------------------------

    def _start_workers(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()  # RuntimeError outside the event loop
        while sum(1 for w in self._workers if not w.retiring) < self._size:
            try:
                self._spawn()
            except OSError as exc:  # out of processes or memory: try again on the next task
                log.error("could not start a render worker: %s", exc)
                return

    def _spawn(self) -> None:
        assert self._loop is not None
        task_reader, task_writer = self._context.Pipe(duplex=False)
        result_reader, result_writer = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=_serve, args=(task_reader, result_writer, self._memory_limit),
            name="vaultd-render", daemon=True,
        )
        try:
            process.start()
        except BaseException:
            for end in (task_reader, task_writer, result_reader, result_writer):
                end.close()
            raise
        task_reader.close()
        result_writer.close()
        worker = _Worker(process, task_writer, result_reader)
        os.set_blocking(result_reader.fileno(), False)
        with contextlib.suppress(OSError):  # room for a whole page: one write, one wake-up
            fcntl.fcntl(result_reader.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._loop.add_reader(result_reader.fileno(), self._on_readable, worker)
        self._loop.add_reader(process.sentinel, self._on_exit, worker)
        self._workers.append(worker)

    def _dispatch(self) -> None:
        for worker in self._workers:
            if not self._queue:
                return
            if worker.idle and worker.process.is_alive():
                task = self._queue.popleft()
                worker.task = task
                assert self._loop is not None
                task.timer = self._loop.call_later(task.timeout, self._on_timeout, worker, task)
                try:
                    worker.tasks.send_bytes(task.payload)
                except OSError:
                    continue  # the worker is dying; its exit fails the task and replaces it

    def _on_readable(self, worker: _Worker) -> None:
        self._read(worker)

    def _read(self, worker: _Worker) -> bool:
        """Take in what the worker wrote; False when there was nothing (yet, or any more)."""
        try:
            data = os.read(worker.results.fileno(), 1 << 20)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            # End of input: the worker is exiting; its exit handler settles the rest.
            assert self._loop is not None
            with contextlib.suppress(OSError):
                self._loop.remove_reader(worker.results.fileno())
            return False
        worker.inbox += data
        for message in _frames(worker.inbox):
            self._on_message(worker, message)
        return True

    def _on_message(self, worker: _Worker, message: bytes) -> None:
        if message == _READY:
            worker.ready = True
            self._dispatch()
            return
        task = worker.task
        if task is None:
            return
        worker.task = None
        worker.done += 1
        try:
            ok, value = pickle.loads(message)
        except Exception as exc:  # an exception that pickles but does not unpickle here
            _settle(task, error=WorkerCrashed(f"the task's result could not be read: {exc!r}"))
        else:
            if ok:
                _settle(task, value=value)
            else:
                _settle(task, error=value)
        if self._max_tasks and worker.done >= self._max_tasks:  # 0: never recycled
            self._retire(worker)
        self._dispatch()

    def _on_timeout(self, worker: _Worker, task: _Task) -> None:
        if worker.task is task:
            _settle(task, error=TaskTimedOut("the render took too long; its worker was replaced"))
            worker.task = None
            self._retire(worker, kill=True)
            self._dispatch()

    def _retire(self, worker: _Worker, kill: bool = False) -> None:
        """Replace `worker` now; it exits on end of input (or is killed) and is reaped later."""
        worker.retiring = True
        with contextlib.suppress(OSError):
            worker.tasks.close()
        if kill:
            with contextlib.suppress(OSError):
                worker.process.kill()
        if not self._closed:
            self._start_workers()

    def _on_exit(self, worker: _Worker) -> None:
        with contextlib.suppress(OSError):
            while self._read(worker):  # a result written just before the exit still counts
                pass
        self._detach(worker)
        worker.process.join(1.0)  # its pipes closed as it exited: reaped at once
        code = worker.process.exitcode
        _release(worker)
        if worker.task is not None:
            _settle(worker.task, error=WorkerCrashed(f"the render worker died (exit code {code})"))
            worker.task = None
        if worker in self._workers:
            self._workers.remove(worker)
        if not self._closed:
            self._start_workers()
            self._dispatch()

    def _detach(self, worker: _Worker) -> None:
        if self._loop is None:
            return
        for fd in (worker.results.fileno() if not worker.results.closed else -1,
                   worker.process.sentinel):
            if fd >= 0:
                self._loop.remove_reader(fd)

    def _drop_if_queued(self, task: _Task) -> None:
        if task.outcome.cancelled():
            with contextlib.suppress(ValueError):
                self._queue.remove(task)


def _release(worker: _Worker) -> None:
    """Close an exited worker's pipes and process handle (its sentinel is a file descriptor)."""
    for connection in (worker.tasks, worker.results):
        with contextlib.suppress(OSError):
            connection.close()
    with contextlib.suppress(ValueError):  # still running: only after a failed kill
        worker.process.close()


def _settle(task: _Task, value: Any = None, error: BaseException | None = None) -> None:
    if task.timer is not None:
        task.timer.cancel()
    if task.outcome.done():
        return  # the caller went away, or the pool closed
    if error is not None:
        task.outcome.set_exception(error)
    else:
        task.outcome.set_result(value)


def _frames(inbox: bytearray) -> list[bytes]:
    """Complete messages at the front of `inbox` (multiprocessing's framing), removed from it."""
    messages = []
    while len(inbox) >= 4:
        (size,) = struct.unpack("!i", inbox[:4])
        header = 4
        if size == -1:
            if len(inbox) < 12:
                break
            (size,) = struct.unpack("!Q", inbox[4:12])
            header = 12
        if len(inbox) < header + size:
            break
        messages.append(bytes(inbox[header:header + size]))
        del inbox[:header + size]
    return messages


# --- inside a worker process ------------------------------------------------------------------


def _serve(tasks: Connection, results: Connection, memory_limit: int) -> None:
    """A worker's life: say it is ready, then take tasks and send back their results, until
    end of input."""
    _die_with_parent()
    worker_init(memory_limit)
    results.send_bytes(_READY)
    while True:
        try:
            payload = tasks.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            fn, args = pickle.loads(payload)
            reply = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - the task's own error goes to the caller
            reply = (False, exc)
        results.send_bytes(_encode_reply(reply))


def _encode_reply(reply: tuple[bool, Any]) -> bytes:
    # An unpicklable result or exception still answers the task, as a RuntimeError.
    try:
        return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        error = RuntimeError(f"the task's result could not be sent: {type(exc).__name__}")
        return pickle.dumps((False, error), protocol=pickle.HIGHEST_PROTOCOL)


def _die_with_parent() -> None:
    # Spawned from the event loop's thread, which lives as long as vaultd: if vaultd is killed,
    # the kernel kills the worker too rather than leaving it rendering for nobody.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the parent died before the line above
            os._exit(1)

"""The pool's records of tasks and workers, its dispatch decision, and how a task is settled.

`choose_worker` is the one place that decides which worker takes a task (a warm per-worker page
cache slots in here); which task goes next is `render.pool.scheduler`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

from render.pool.pipe_outbox import Outbox
from render.sandbox.layers import Layer
from render.wire.channel import Kind, frame


class BrokeredDocument(Protocol):
    """The server's side of a task's one document: plaintext ranges, read and decrypted."""

    @property
    def size(self) -> int: ...

    async def read(self, offset: int, length: int) -> bytes: ...

    async def check(self) -> None:
        """Raise if the document is gone or its storage unreachable (run while it renders)."""


@dataclass(eq=False)
class Task:
    payload: bytes
    timeout: float
    outcome: asyncio.Future[Any]
    account: str | None = None
    document: BrokeredDocument | None = None
    link: str | None = None  # the view link the task serves (fair queue: per-link turns, cap)
    ip: str | None = None  # the client's address (fair queue: per-IP cap)
    started: float = 0.0  # when a worker took it (monotonic)
    timer: asyncio.TimerHandle | None = None
    reading: bool = False
    broker_error: BaseException | None = None
    check: asyncio.Future[None] | None = None  # the document still exists: awaited on success
    # What the task can reuse from an earlier one (a page: file, blob, page number): a worker
    # that ran a task with the same key is preferred, as it may have the page kept.
    affinity: Hashable | None = None
    queued: float = field(default_factory=time.monotonic)  # when it was submitted (metrics)
    background: bool = False  # work of the server's own (a page's print): takes no one's slot


NO_LAYERS = Layer(0)  # a worker not yet READY: no sandbox layer known
RECENT_AFFINITIES = 4096  # per worker, as many as the page cache remembers (SEEN_KEYS)


@dataclass(eq=False)
class Worker:
    process: BaseProcess
    tasks: Connection  # the parent's end: tasks and broker answers go out
    results: Connection  # the parent's end: READY, results, errors and reads come in
    outbox: Outbox  # writes `tasks` from the event loop, never blocking it
    task: Task | None = None
    account: str | None = None  # bound by its first task that names one, for life
    done: int = 0
    ready: bool = False
    retiring: bool = False
    layers: Layer = NO_LAYERS
    started: float = field(default_factory=time.monotonic)
    inbox: bytearray = field(default_factory=bytearray)
    recent: OrderedDict[Hashable, None] = field(default_factory=OrderedDict)  # affinities run

    def ran(self, affinity: Hashable | None) -> None:
        """Remember a task's affinity (the latest `RECENT_AFFINITIES`)."""
        if affinity is None:
            return
        self.recent[affinity] = None
        self.recent.move_to_end(affinity)
        if len(self.recent) > RECENT_AFFINITIES:
            self.recent.popitem(last=False)

    @property
    def idle(self) -> bool:
        return self.ready and self.task is None and not self.retiring


def choose_worker(task: Task, workers: list[Worker]) -> Worker | None:
    """The dispatch decision: an idle worker already serving the task's account (one that ran
    the task's affinity first: it may have the page kept), else an idle worker that has served
    no account. None: the task waits (see `render.pool.scheduler`). A busy worker holding the page
    is never waited for: a kept page saves 5-40 ms, waiting costs a whole page."""
    idle = [w for w in workers if w.idle and w.process.is_alive()]
    if task.account is None:
        return idle[0] if idle else None
    own = [w for w in idle if w.account == task.account]
    if task.affinity is not None:
        warm = next((w for w in own if task.affinity in w.recent), None)
        if warm is not None:
            return warm
    return own[0] if own else next((w for w in idle if w.account is None), None)


def release(worker: Worker) -> None:
    """Close an exited worker's pipes and process handle (its sentinel is a file descriptor)."""
    worker.outbox.close()
    for connection in (worker.tasks, worker.results):
        with contextlib.suppress(OSError):
            connection.close()
    with contextlib.suppress(ValueError):  # still running: only after a failed kill
        worker.process.close()


def settle(task: Task, value: Any = None, error: BaseException | None = None) -> None:
    if task.timer is not None:
        task.timer.cancel()
    if task.outcome.done():
        return  # the caller went away, or the pool closed
    if error is not None:
        task.outcome.set_exception(error)
    else:
        task.outcome.set_result(value)


async def answer_read(worker: Worker, task: Task, document: BrokeredDocument, offset: int,
                       length: int) -> None:
    """The broker's answer to one checked read: the bytes, or a bare "no" (status 1) while the
    real error is kept for the task's caller. Back-pressure: nothing is read for a worker until
    its previous answer has left the outbox for the pipe, so a worker that stops reading holds
    at most one answer in the server (`render.pool.pipe_outbox`) and its task ends at its
    deadline."""
    await worker.outbox.drained()
    if worker.task is not task or worker.outbox.closed:
        return  # timed out or killed meanwhile (`reading` no longer matters)
    try:
        data, status = await document.read(offset, length), 0
    except Exception as exc:  # noqa: BLE001 - kept for the caller; the worker learns "no"
        task.broker_error = task.broker_error or exc
        data, status = b"", 1
    task.reading = False
    if worker.task is not task or (task.outcome.done() and worker.retiring):
        return  # timed out or killed meanwhile
    worker.outbox.send(frame(Kind.DATA, data, status=status))


def settle_after_check(task: Task, value: Any) -> None:
    check = task.check
    if check is None or check.done():
        error = check.exception() if check is not None and not check.cancelled() else None
        settle(task, value=None if error else value, error=error)
        return
    check.add_done_callback(lambda _: settle_after_check(task, value))


def retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()  # reported through the task when it matters; never "unretrieved"

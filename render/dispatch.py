"""The pool's records of tasks and workers, and its dispatch decision.

`choose_worker` is the one place that decides which worker takes a task: per-account fairness
(issue 15) or a warm per-worker page cache (issue 19) slot in here.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

from render.sandbox.layers import Layer


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
    timer: asyncio.TimerHandle | None = None
    reading: bool = False
    broker_error: BaseException | None = None
    check: asyncio.Future[None] | None = None  # the document still exists: awaited on success


@dataclass(eq=False)
class Worker:
    process: BaseProcess
    tasks: Connection  # the parent's end: tasks and broker answers go out
    results: Connection  # the parent's end: READY, results, errors and reads come in
    task: Task | None = None
    account: str | None = None  # bound by its first task that names one, for life
    done: int = 0
    ready: bool = False
    retiring: bool = False
    layers: Layer = Layer(0)
    started: float = field(default_factory=time.monotonic)
    inbox: bytearray = field(default_factory=bytearray)

    @property
    def idle(self) -> bool:
        return self.ready and self.task is None and not self.retiring


def choose_worker(task: Task, workers: list[Worker]) -> Worker | None:
    """The dispatch decision: an idle worker already serving the task's account, else an idle
    worker that has served no account. None: the task waits (see `_make_room`)."""
    idle = [w for w in workers if w.idle and w.process.is_alive()]
    if task.account is None:
        return idle[0] if idle else None
    return (next((w for w in idle if w.account == task.account), None)
            or next((w for w in idle if w.account is None), None))

"""Messages from a render worker, as the pool takes them in: READY, results, errors and reads.

What a worker sends is parsed as data (`render.wire.channel`, `render.wire.replies`), never
unpickled: a malformed, oversized or unexpected message gets the worker killed and replaced, and its
task fails with WorkerCrashed. A mixin of `render.pool.render_pool.RenderPool`, kept apart so that
the pool's module holds its life cycle and this one the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time

from render.pool.dispatch import Task, Worker, answer_read, settle, settle_after_check
from render.pool.sandbox_report import SandboxReport
from render.sandbox.layers import ALL_LAYERS, Layer
from render.wire.channel import (
    MAX_READ_BYTES,
    READ_REQUEST,
    ChannelViolation,
    ErrorCode,
    Kind,
    Message,
    parse_worker_frames,
)
from render.wire.replies import decode_error, decode_result

log = logging.getLogger("vaultd.render")


class WorkerCrashed(Exception):
    """The worker died under the task (segfault, SIGKILL, OOM kill), or broke the protocol and
    was killed. Only this request fails."""


class WorkerMessages:
    """The pool's side of the channel protocol; the pool provides the attributes below."""

    sandbox: SandboxReport
    switch_seconds: list[float]
    _loop: asyncio.AbstractEventLoop | None
    _max_tasks: int
    _switching: list[float]
    _reads: set[asyncio.Future[None]]

    def _dispatch(self) -> None:
        raise NotImplementedError

    def _free(self, worker: Worker, timed_out: bool = False, outcome: str = "done") -> None:
        raise NotImplementedError

    def _retire(self, worker: Worker, kill: bool = False, replace: bool = True) -> None:
        raise NotImplementedError

    def _on_readable(self, worker: Worker) -> None:
        self._read(worker)

    def _read(self, worker: Worker) -> bool:
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
        try:
            for message in parse_worker_frames(worker.inbox):
                self._on_message(worker, message)
        except ChannelViolation as exc:
            self._on_violation(worker, str(exc))
            return False
        return True

    def _on_message(self, worker: Worker, message: Message) -> None:
        if worker.retiring and worker.task is None:
            return  # killed for a violation: what it still sends is of no interest
        if message.kind == Kind.READY:
            self._on_ready(worker, Layer(message.code & ALL_LAYERS))
            return
        task = worker.task
        if task is None or not worker.ready:
            raise ChannelViolation(f"message kind {message.kind} with no task running")
        if message.kind == Kind.READ:
            self._on_read_request(worker, task, message)
            return
        if task.reading:
            raise ChannelViolation("a result while a read is outstanding")
        if worker.outbox.unread():
            # It skipped an answer: its next task would sit behind it, the worker out of step.
            raise ChannelViolation("a result with a broker answer left unread")
        if message.kind == Kind.RESULT:
            settle_after_check(task, decode_result(message))
        else:
            error: BaseException = decode_error(message)
            if message.code == ErrorCode.BROKER and task.broker_error is not None:
                error = task.broker_error  # what the broker saw, not what the worker says
            settle(task, error=error)
        self._free(worker)
        worker.done += 1
        if self._max_tasks and worker.done >= self._max_tasks:  # 0: never recycled
            self._retire(worker)
        self._dispatch()

    def _on_ready(self, worker: Worker, layers: Layer) -> None:
        if worker.ready:
            raise ChannelViolation("a second READY")
        worker.ready, worker.layers = True, layers
        if not self.sandbox.accept(layers):
            self._retire(worker, kill=True, replace=False)
            return
        if self._switching:
            self.switch_seconds.append(time.monotonic() - self._switching.pop(0))
        self._dispatch()

    def _on_read_request(self, worker: Worker, task: Task, message: Message) -> None:
        offset, length = READ_REQUEST.unpack(message.payload)
        document = task.document
        if document is None or task.reading:
            raise ChannelViolation("a read with no document, or two reads at once")
        if not 0 < length <= MAX_READ_BYTES or offset + length > document.size:
            raise ChannelViolation(f"a read of {length} bytes at {offset}")
        task.reading = True
        reading = asyncio.ensure_future(answer_read(worker, task, document, offset, length))
        self._reads.add(reading)  # kept until done: a task with no reference may be collected
        reading.add_done_callback(self._reads.discard)

    def _on_violation(self, worker: Worker, reason: str) -> None:
        log.error("render worker %s broke the channel protocol (%s); killed",
                  worker.process.pid, reason[:200])
        task = worker.task
        if task is not None:
            settle(task, error=WorkerCrashed("the render worker misbehaved and was replaced"))
            self._free(worker, outcome="crash")
        worker.inbox.clear()
        self._retire(worker, kill=True)
        self._dispatch()

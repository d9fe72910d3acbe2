"""The render process pool, awaitable from the Tornado event loop.

Why not `concurrent.futures.ProcessPoolExecutor`: when one stdlib worker dies (a segfault in
PDFium, a SIGKILL from the OOM killer) the executor marks itself broken and fails every pending
and future task, and a task that runs too long cannot be stopped. Why not pebble, which has the
right semantics and was used first: every task crossed two of its threads each way (a scheduler
and a result reader, both contending for the GIL with the event loop) and one pipe shared by all
workers under a lock, about 2.5 ms of hand-overs on a page that renders in 20.

Here each worker has its own two pipes, written and read by the event loop itself (`add_reader`,
no thread; writes through a non-blocking, bounded `render.pool.pipe_outbox.Outbox`, so a worker that
stops reading never blocks the loop). A worker says once that it is ready (its imports done), then
each task costs one message each way; a task's timeout starts when it is handed to a ready
worker and covers its transfers, and at the timeout the worker is killed and replaced. A
worker that dies fails its own task only (WorkerCrashed) and is replaced; workers are also
replaced after `max_tasks_per_worker` tasks, which bounds leaks in native code.
Workers are forked by a zygote (multiprocessing's fork server, started with no VAULTD_* variable
and preloaded with every rendering import, having seen no data), so a new worker costs a fork,
not a ~0.2 s interpreter start. Each worker confines itself (`render.sandbox`) before its first
task and reports which layers are active. A worker serves one account in its life: tasks go to
a worker of their account, or to a fresh one; a worker of another account is replaced first.

What a worker sends is parsed as data (`render.pool.worker_messages`), never unpickled: a malformed,
oversized or unexpected message gets the worker killed and replaced, and its task fails with
WorkerCrashed (503). A task may name one document (its broker): the worker then asks
for plaintext ranges of that document over its channel, and only of that one.

Admission is decided here: at most `workers + queue_size` tasks are in flight, and the next one
gets PoolBusy at once (the server answers 503 with Retry-After) instead of waiting. The
server's own background work (a page's print) starts only on an idle worker and is not counted
there, so it never turns a viewer's page away. Waiting tasks are served fairly
(`render.pool.scheduler`, `render.pool.fair_queue`): round-robin per account and per link, caps
on what one link, client IP or account has waiting (past them QueueRefused: 429; a burst below
them waits its turns; the account's cap keeps one account from filling the queue), a
per-account running cap that keeps a worker for the other accounts, and turns lost by an
account whose render timed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import pickle
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from render.pool import zygote
from render.pool.dispatch import BrokeredDocument, Task, Worker, release, retrieve, settle
from render.pool.fair_queue import FairQueueLimits
from render.pool.observer import IgnoreAll, PoolObserver
from render.pool.pipe_outbox import Outbox
from render.pool.sandbox_report import SandboxReport
from render.pool.scheduler import Scheduler
from render.pool.worker_messages import WorkerCrashed as WorkerCrashed
from render.pool.worker_messages import WorkerMessages
from render.sandbox.layers import ALL_LAYERS
from render.wire.channel import Kind, frame
from render.wire.model import WorkerConfig
from render.worker.entry_points import start_worker

T = TypeVar("T")
log = logging.getLogger("vaultd.render")

# close() gives workers this long to exit after SIGTERM, then kills whatever is left.
_STOP_SECONDS = 3.0
_PIPE_BYTES = 1 << 20
_MAX_EARLY_DEATHS = 5  # workers in a row that die before READY: stop restarting them


class PoolBusy(Exception):
    """Every worker is busy and the queue is full (or the pool is shutting down): 503."""


class TaskTimedOut(Exception):
    """The task outlived its timeout; its worker was killed and replaced: 503."""


class RenderPool(WorkerMessages):
    """A bounded pool of confined render worker processes."""

    def __init__(
        self,
        workers: int,
        queue_size: int,
        timeout_seconds: float = 30.0,
        max_tasks_per_worker: int = 200,
        memory_limit_bytes: int = 2 << 30,
        sandbox: str = "auto",
        fairness: FairQueueLimits | None = None,
        observer: PoolObserver | None = None,
    ) -> None:
        self._size = workers
        self.observer: PoolObserver = observer or IgnoreAll()
        self._capacity = workers + queue_size
        fairness = fairness or FairQueueLimits(max_running_per_account=max(1, workers - 1))
        self.scheduler = Scheduler(FairQueueLimits(
            max_queued=self._capacity, max_per_link=fairness.max_per_link,
            max_per_ip=fairness.max_per_ip,
            max_waiting_per_account=fairness.max_waiting_per_account,
            timeout_penalty=fairness.timeout_penalty,
            max_running_per_account=fairness.max_running_per_account))
        self._timeout = timeout_seconds
        self._max_tasks = max_tasks_per_worker
        self._config = WorkerConfig(memory_limit_bytes)
        self.sandbox = SandboxReport(sandbox)
        self._context = zygote.context()
        self._workers: list[Worker] = []
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._early_deaths = 0
        self.switch_seconds: list[float] = []  # account switches: retire to replacement ready
        self._switching: list[float] = []
        self._reads: set[asyncio.Future[None]] = set()  # broker answers under way
        zygote.protect_server()
        with contextlib.suppress(RuntimeError):  # started now when built inside the event loop
            self._start_workers()

    @property
    def in_flight(self) -> int:
        """Tasks queued or running, including those whose caller has gone away."""
        return self.scheduler.in_flight

    @property
    def queued(self) -> int:
        """Tasks waiting for a worker (queued, or taken for a worker still starting)."""
        return self.scheduler.queue.queued + len(self.scheduler.assigned)

    def idle_for_background(self) -> bool:
        """Whether background work (`submit`'s `background`) would start now."""
        return not self._closed and self.in_flight < self._size

    def ready_workers(self) -> int:
        """Workers that reported READY and are not retiring (tests, health)."""
        return sum(1 for w in self._workers if w.ready and not w.retiring)

    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w.process.pid and not w.retiring]

    def sandbox_state(self) -> dict[str, Any]:
        """Each sandbox layer active or missing, as the latest worker reported it."""
        return self.sandbox.state()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until a worker has reported its sandbox; SandboxUnavailable when "required" and a
        layer is missing."""
        self._start_workers()
        deadline = time.monotonic() + timeout
        while self.sandbox.layers is None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.sandbox.check_required()

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None,
                  account: str | None = None, document: BrokeredDocument | None = None,
                  link: str | None = None, ip: str | None = None,
                  affinity: Hashable | None = None, background: bool = False) -> T:
        """Run `fn(*args)` in a worker and return its result.

        Raises PoolBusy, QueueRefused, TaskTimedOut, WorkerCrashed, or the task's own error.
        """
        return await self.submit(fn, *args, timeout=timeout, account=account, document=document,
                                 link=link, ip=ip, affinity=affinity, background=background)

    def submit(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None,
        account: str | None = None, document: BrokeredDocument | None = None,
        link: str | None = None, ip: str | None = None, affinity: Hashable | None = None,
        background: bool = False,
    ) -> asyncio.Future[T]:
        """Queue `fn(*args)` now and return its future; PoolBusy at once if no slot is free,
        QueueRefused (render.pool.fair_queue) if the link or client IP is over its cap.

        `account` keeps the task to workers of that account; `document` is the one document
        the worker may read during the task; `link` and `ip` are its turn and caps in the fair
        queue; `affinity` prefers a worker that ran a task with the same key (`choose_worker`).
        Cancelling the future drops a queued task; a running one is left to finish:
        killing its worker would cost a replacement.

        `background`: the server's own work, which no request waits for (a page's print). It
        starts only while a worker is idle and nothing waits (else PoolBusy), and it takes no
        request's slot: a page that comes meanwhile is queued behind it, even with no queue,
        where it would otherwise be refused with every slot taken.
        """
        if self._closed:
            raise PoolBusy("the render pool is shutting down")
        if background and not self.idle_for_background():
            raise PoolBusy("no render worker is idle for background work")
        # The background tasks are counted out only when the slots look full: a page's submit
        # does not walk the tasks in flight otherwise.
        if (self.in_flight >= self._capacity
                and self.in_flight - self.scheduler.background_in_flight() >= self._capacity):
            raise PoolBusy(f"all {self._capacity} render slots are taken")
        self._start_workers()
        if not self._workers:
            raise PoolBusy("no render worker could be started")
        assert self._loop is not None
        outcome: asyncio.Future[T] = self._loop.create_future()
        payload = frame(Kind.TASK, pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL))
        task = Task(payload, self._timeout if timeout is None else timeout, outcome,
                    account, document, link, ip, affinity=affinity, background=background)
        self.scheduler.push(task)  # QueueRefused: nothing started
        if document is not None:
            # A worker may render from its own cache without a read: the server still checks,
            # during the render, that the document exists and its storage answers.
            task.check = asyncio.ensure_future(document.check())
            task.check.add_done_callback(retrieve)
        outcome.add_done_callback(lambda _: self._drop_if_queued(task))
        self._dispatch()
        return outcome

    async def close(self) -> None:
        """Stop every worker (running tasks are abandoned) and wait, boundedly, for them."""
        if self._closed:
            return
        self._closed = True
        for task in [*self.scheduler.drain(), *(w.task for w in self._workers if w.task)]:
            settle(task, error=PoolBusy("the render pool is shutting down"))
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
            release(worker)

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
        process = zygote.WorkerProcess(
            target=start_worker, args=(task_reader, result_writer, self._config),
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
        worker = Worker(process, task_writer, result_reader,
                        Outbox(self._loop, task_writer.fileno()))
        os.set_blocking(result_reader.fileno(), False)
        for end in (result_reader, task_writer):  # room for a page or a read: one write
            with contextlib.suppress(OSError):
                fcntl.fcntl(end.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._loop.add_reader(result_reader.fileno(), self._on_readable, worker)
        self._loop.add_reader(process.sentinel, self._on_exit, worker)
        self._workers.append(worker)
        self.observer.worker_started()

    def _dispatch(self) -> None:
        self.scheduler.dispatch(self._workers, self._hand_over, self._make_room)

    def _make_room(self, victim: Worker) -> None:
        self._switching.append(time.monotonic())
        self._retire(victim)  # its replacement, forked now, is the waiting task's

    def _hand_over(self, worker: Worker, task: Task) -> None:
        assert self._loop is not None
        worker.task = task
        if task.account is not None:
            worker.account = task.account
        worker.ran(task.affinity)
        task.started = time.monotonic()
        self.observer.task_started(task.started - task.queued)
        # The deadline covers the task's transfers too: the loop never blocks on a worker's
        # pipe (render.pool.pipe_outbox), so this timer fires even for a worker that stopped
        # reading.
        task.timer = self._loop.call_later(task.timeout, self._on_timeout, worker, task)
        worker.outbox.send(task.payload)  # a worker whose pipe broke is dying: its exit fails it

    def _on_timeout(self, worker: Worker, task: Task) -> None:
        if worker.task is task:
            settle(task, error=TaskTimedOut("the render took too long; its worker was replaced"))
            self._free(worker, timed_out=True)
            self._retire(worker, kill=True)
            self._dispatch()

    def _retire(self, worker: Worker, kill: bool = False, replace: bool = True) -> None:
        """Replace `worker` now; it exits on end of input (or is killed) and is reaped later."""
        worker.retiring = True
        worker.outbox.close()  # first: the loop must not watch a closed pipe
        with contextlib.suppress(OSError):
            worker.tasks.close()
        if kill:
            with contextlib.suppress(OSError):
                worker.process.kill()
        if replace and not self._closed:
            self._start_workers()

    def _on_exit(self, worker: Worker) -> None:
        with contextlib.suppress(OSError):
            while not worker.retiring and self._read(worker):  # a last result still counts
                pass
        self._detach(worker)
        worker.process.join(1.0)  # its pipes closed as it exited: reaped at once
        code = worker.process.exitcode
        release(worker)
        if worker.task is not None:
            settle(worker.task, error=WorkerCrashed(f"the render worker died (exit code {code})"))
            self._free(worker, outcome="crash")
        if worker in self._workers:
            self._workers.remove(worker)
        if not worker.retiring:  # not retired or killed by the pool: it died on its own
            self.observer.worker_crashed()
        self._early_deaths = 0 if worker.ready else self._early_deaths + 1
        if self._early_deaths >= _MAX_EARLY_DEATHS:
            # Workers die before they are ready: starting more would only loop.
            log.error("render workers die at start (exit code %s); not restarting them", code)
            for task in self.scheduler.drain():
                settle(task, error=WorkerCrashed("no render worker could start"))
            return
        if not self._closed and (self.sandbox.mode != "required" or worker.layers == ALL_LAYERS):
            self._start_workers()
            self._dispatch()

    def _detach(self, worker: Worker) -> None:
        if self._loop is None:
            return
        for fd in (worker.results.fileno() if not worker.results.closed else -1,
                   worker.process.sentinel):
            if fd >= 0:
                with contextlib.suppress(ValueError, OSError):
                    self._loop.remove_reader(fd)

    def _free(self, worker: Worker, timed_out: bool = False, outcome: str = "done") -> None:
        if worker.task is not None:
            task = worker.task
            self.observer.task_finished(time.monotonic() - task.started,
                                        "timeout" if timed_out else outcome, task.account)
            self.scheduler.finished(task, timed_out)
            worker.task = None

    def _drop_if_queued(self, task: Task) -> None:
        if task.outcome.cancelled():
            self.scheduler.cancel(task)


"""Which waiting render task runs next, and on which worker: the pool's fair queue.

Waiting tasks sit in a `FairQueue` (round-robin per account, then per link; caps on the tasks
one link, client IP or account has waiting; a per-account running cap; a timed-out render puts
its account in debt). When a worker is free (or being forked), the queue's next task is taken and
handed to a worker of its account or a fresh one (`render.pool.dispatch.choose_worker`). When only
workers bound to other accounts are idle, one of them is retired: its replacement, forked now,
is reserved for that task (`assigned`), so the task keeps the turn the queue gave it.

A task with no account, link or IP (the pool's own tests, internal jobs) gets a key of its
own for each: it is never capped and takes its turn like an account of one task. The per-IP
cap counts an IP's tasks within one account: on the API route the viewer's IP is what the
account's backend says (`X-Viewer-IP`), so one tenant must not use up another's share.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from render.pool.dispatch import Task, Worker, choose_worker
from render.pool.fair_queue import FairQueue, FairQueueLimits


class Scheduler:
    def __init__(self, limits: FairQueueLimits) -> None:
        self.queue: FairQueue[Task] = FairQueue(limits)
        # Taken from the queue (counted as running) and waiting for the worker forked for them.
        self.assigned: deque[Task] = deque()
        self.dropped = 0  # tasks dropped before they ran: their client had gone
        self.completed = 0  # tasks a worker finished (result, error, timeout or crash)

    @property
    def in_flight(self) -> int:
        """Tasks queued, assigned or running, including those whose caller has gone away."""
        return self.queue.in_flight()

    def background_in_flight(self) -> int:
        """Of those, the server's own work (`Task.background`): at most a pool's size."""
        return sum(1 for task in self.queue.in_flight_tasks() if task.background)

    def push(self, task: Task) -> None:
        """Queue `task`; QueueRefused (LinkBusy, ClientBusy, AccountBusy, QueueFull) leaves
        nothing behind."""
        own = f"\0task-{id(task)}"
        account = task.account or own
        ip = f"{account}\0{task.ip}" if task.ip else own
        self.queue.push(task, account, task.link or own, ip)

    def cancel(self, task: Task) -> None:
        """The caller has gone: a task not yet on a worker never runs."""
        if self.queue.cancel(task):
            self.dropped += 1
        elif task in self.assigned:
            self.assigned.remove(task)
            self.queue.done(task, 0.0, timed_out=False)
            self.dropped += 1

    def finished(self, task: Task, timed_out: bool = False) -> None:
        """A worker is done with `task`; a timeout counts against its account."""
        self.completed += 1
        self.queue.done(task, time.monotonic() - task.started, timed_out)

    def drain(self) -> list[Task]:
        """Every task not yet on a worker, removed (to be failed: the pool is closing)."""
        tasks = [*self.assigned, *self.queue.waiting()]
        for task in self.assigned:
            self.queue.done(task, 0.0, timed_out=False)
        self.assigned.clear()
        for task in self.queue.waiting():
            self.queue.cancel(task)
        return tasks

    def dispatch(self, workers: list[Worker], hand_over: Callable[[Worker, Task], None],
                 make_room: Callable[[Worker], None]) -> None:
        """Give free workers the queue's next tasks. `make_room` retires an idle worker of
        another account so that its replacement serves the task just taken."""
        waiting: deque[Task] = deque()
        for earlier in self.assigned:  # first: their turn came before
            worker = choose_worker(earlier, workers)
            if worker is not None:
                hand_over(worker, earlier)
            else:
                waiting.append(earlier)
        self.assigned = waiting
        coming = sum(1 for w in workers if w.account is None and not w.retiring
                     and w.task is None and not w.ready) - len(self.assigned)
        while True:
            idle = [w for w in workers if w.idle and w.process.is_alive()]
            if not idle and coming <= 0:
                return
            task = self.queue.pop()
            if task is None:
                return
            worker = choose_worker(task, workers)
            if worker is not None:
                hand_over(worker, task)
                continue
            self.assigned.append(task)
            if coming > 0:
                coming -= 1  # a fresh worker on its way is this task's
                continue
            # Only workers bound to other accounts are idle: one is replaced for this task
            # (a worker never serves a second account).
            make_room(next(w for w in idle if w.account != task.account))

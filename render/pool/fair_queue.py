"""A fair render queue: round-robin per account, then per link, with caps and penalties.

One global FIFO lets a single tenant (or one leaked link) hold every worker while the others
wait. This queue serves accounts in turn, and within an account its links in turn, so a burst
from one account leaves another account's next task at most one round from the head.

- **Caps**: at most `max_per_link` and `max_per_ip` tasks *waiting* per link and per client
  IP, `max_waiting_per_account` per account, and at most `max_queued` waiting in all. A burst
  of one link's pages is queued, not refused: what runs at once is bounded by the turns and
  the per-account running cap below, so the caps only bound how much one link, client or
  account may hold waiting. The account cap, below `max_queued`, is what keeps one account
  spreading a flood over many links from filling the queue for every other account.
  Refusals are typed: `LinkBusy`, `ClientBusy` and `AccountBusy` are the caller's own doing
  (HTTP 429 with Retry-After), `QueueFull` is the server's (HTTP 503 with Retry-After), like
  the pool's PoolBusy.
- **Cancellation**: a task whose client has gone is removed before it runs (`cancel`).
- **Reserve** (optional, `max_running_per_account`): an account may run at most that many
  tasks at once, so a newcomer finds a free worker instead of waiting for a heavy render. An
  account whose recent renders are short (`borrow_below_seconds`) may still take the reserved
  workers: a newcomer then waits for one short render at most, and one account alone keeps
  every worker busy (without this, a single tenant on two workers would get one).
- **Penalty**: a render that timed out gives its account `timeout_penalty` turns of debt; an
  account in debt is passed over (paying one turn each time) while any other account waits.
  The queue stays work-conserving: when only indebted accounts wait, one of them is served.

Pure data structure, no I/O and no clock: the pool calls `push` when a request arrives, `pop`
when a worker is free, `done` when a task ends and `cancel` when a client disconnects.
Tasks are identified by identity-or-equality as dict keys, so they must be hashable and
distinct while queued (the pool's per-task objects are).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

_AVERAGE_WEIGHT = 0.3  # of the newest render in an account's moving average

TaskT = TypeVar("TaskT", bound=Hashable)
_V = TypeVar("_V")


class QueueRefused(Exception):
    """The task was not queued. `status` is the HTTP status the server answers with."""

    status = 503
    retry_after = 1


class QueueFull(QueueRefused):
    """Every slot of the queue is taken: the server is busy (503)."""

    status = 503


class LinkBusy(QueueRefused):
    """This link already has its share of tasks in flight (429)."""

    status = 429


class ClientBusy(QueueRefused):
    """This client IP already has its share of tasks in flight (429)."""

    status = 429


class AccountBusy(QueueRefused):
    """This account already has its share of the queue waiting (429)."""

    status = 429


@dataclass(frozen=True)
class FairQueueLimits:
    max_queued: int = 64  # tasks waiting, all accounts together
    max_per_link: int = 64  # waiting (not running), per link
    max_per_ip: int = 64  # waiting (not running), per client IP
    # Waiting, per account: below max_queued, so one account never fills the queue.
    max_waiting_per_account: int = 128
    timeout_penalty: int = 4  # turns an account is passed over per timed-out render
    # Tasks one account may have running at once; None: no cap. Set it to workers - 1 (at
    # least 1) to keep a worker for the other accounts: with every worker busy, round-robin
    # alone still makes a newcomer wait for a whole heavy render to finish.
    max_running_per_account: int | None = None
    # Past that cap an account may borrow while its recent renders (a moving average of
    # `done`'s elapsed) are shorter than this; one never measured does not. None: never borrow.
    borrow_below_seconds: float | None = 0.1


@dataclass(eq=False)
class _Entry(Generic[TaskT]):
    task: TaskT
    account: str
    link: str
    ip: str
    running: bool = False


@dataclass(eq=False)
class _Account(Generic[TaskT]):
    links: dict[str, deque[_Entry[TaskT]]] = field(default_factory=dict)  # insertion = turn
    queued: int = 0
    last_link: str | None = None


class FairQueue(Generic[TaskT]):
    """Round-robin over accounts, then links; see the module docstring."""

    def __init__(self, limits: FairQueueLimits | None = None) -> None:
        self.limits = limits or FairQueueLimits()
        self._entries: dict[TaskT, _Entry[TaskT]] = {}
        self._accounts: dict[str, _Account[TaskT]] = {}  # insertion order = rotation
        self._per_link: dict[str, int] = {}
        self._per_ip: dict[str, int] = {}
        self._debt: dict[str, int] = {}
        self._running_by_account: dict[str, int] = {}
        self._recent_seconds: dict[str, float] = {}  # per account: moving average of renders
        self._queued = 0
        # The account served last goes to the back of the rotation at the next pop, not at
        # once: an account that arrives in between must come before it, not after.
        self._last_account: str | None = None

    # --- counts ------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def running(self) -> int:
        return len(self._entries) - self._queued

    def __len__(self) -> int:
        return self._queued

    def debt(self, account: str) -> int:
        return self._debt.get(account, 0)

    def waiting(self) -> list[TaskT]:
        """The tasks not yet popped, in no particular order (to fail them when closing)."""
        return [entry.task for entry in self._entries.values() if not entry.running]

    def in_flight(self) -> int:
        """Tasks queued or running."""
        return len(self._entries)

    def in_flight_tasks(self) -> list[TaskT]:
        """The tasks queued or running, in no particular order."""
        return list(self._entries)

    def waiting_for(self, *, link: str | None = None, ip: str | None = None) -> int:
        """Tasks of this link (or client IP) waiting, which its cap counts."""
        if link is not None:
            return self._per_link.get(link, 0)
        return self._per_ip.get(ip, 0) if ip is not None else self._queued

    # --- the four operations -----------------------------------------------------------------

    def push(self, task: TaskT, account: str, link: str, ip: str) -> None:
        """Queue `task`, or raise QueueFull / LinkBusy / ClientBusy / AccountBusy (nothing is
        changed then)."""
        if task in self._entries:
            raise ValueError("task is already queued or running")
        if self._per_link.get(link, 0) >= self.limits.max_per_link:
            raise LinkBusy("too many pages of this link are being rendered; retry shortly")
        if self._per_ip.get(ip, 0) >= self.limits.max_per_ip:
            raise ClientBusy("too many pages requested at once from this address")
        held = self._accounts.get(account)
        if held is not None and held.queued >= self.limits.max_waiting_per_account:
            raise AccountBusy("too many renders of this account are waiting; retry shortly")
        if self._queued >= self.limits.max_queued:
            raise QueueFull("server busy; retry shortly")
        entry = _Entry(task, account, link, ip)
        self._entries[task] = entry
        bucket = self._accounts.setdefault(account, _Account())
        bucket.links.setdefault(link, deque()).append(entry)
        bucket.queued += 1
        self._queued += 1
        self._per_link[link] = self._per_link.get(link, 0) + 1
        self._per_ip[ip] = self._per_ip.get(ip, 0) + 1

    def pop(self) -> TaskT | None:
        """The next task to run (now counted as running), or None when nothing waits (or every
        waiting account already runs its `max_running_per_account`: pop again after done)."""
        _to_back(self._accounts, self._last_account)
        account = self._next_account()
        if account is None:
            return None
        bucket = self._accounts[account]
        _to_back(bucket.links, bucket.last_link)
        link, entries = next(iter(bucket.links.items()))
        entry = entries.popleft()
        if not entries:
            del bucket.links[link]
        bucket.last_link = link
        bucket.queued -= 1
        if not bucket.queued:
            del self._accounts[account]
        self._last_account = account
        self._queued -= 1
        entry.running = True
        self._unwait(entry)  # a running task no longer counts against its link's and IP's cap
        self._running_by_account[account] = self._running_by_account.get(account, 0) + 1
        return entry.task

    def cancel(self, task: TaskT) -> bool:
        """Drop a task whose client has gone. True if it was still waiting (it will never run);
        False if it is running or unknown (the caller lets a running task finish)."""
        entry = self._entries.get(task)
        if entry is None or entry.running:
            return False
        bucket = self._accounts[entry.account]
        entries = bucket.links[entry.link]
        entries.remove(entry)
        if not entries:
            del bucket.links[entry.link]
        bucket.queued -= 1
        if not bucket.queued:
            del self._accounts[entry.account]
        self._queued -= 1
        self._release(entry)
        return True

    def done(self, task: TaskT, elapsed: float, timed_out: bool) -> None:
        """A running task ended after `elapsed` seconds on a worker (0: it never ran). A timeout
        puts its account in debt."""
        entry = self._entries.get(task)
        if entry is None:
            return
        if not entry.running:
            raise ValueError("done() on a task that was never popped; use cancel()")
        self._release(entry)
        if elapsed > 0:
            before = self._recent_seconds.get(entry.account, elapsed)
            self._recent_seconds[entry.account] = before + _AVERAGE_WEIGHT * (elapsed - before)
        if timed_out:
            self._debt[entry.account] = self.debt(entry.account) + self.limits.timeout_penalty

    # --- internals ---------------------------------------------------------------------------

    def _next_account(self) -> str | None:
        """The first account in rotation without debt; indebted ones pay a turn as they are
        passed over. When all waiting accounts are indebted, the first is served anyway."""
        eligible = [account for account in self._accounts if self._may_run(account)]
        if not eligible:
            return None
        passed: list[str] = []
        chosen: str | None = None
        for account in eligible:
            if self._debt.get(account, 0) <= 0:
                chosen = account
                break
            self._pay(account)
            passed.append(account)
        for account in passed:  # passed over: to the back of the rotation
            _to_back(self._accounts, account)
        return chosen if chosen is not None else passed[0]

    def _may_run(self, account: str) -> bool:
        cap = self.limits.max_running_per_account
        if cap is None or self._running_by_account.get(account, 0) < cap:
            return True
        quick, recent = self.limits.borrow_below_seconds, self._recent_seconds.get(account)
        return quick is not None and recent is not None and recent < quick

    def _pay(self, account: str) -> None:
        left = self._debt[account] - 1
        if left > 0:
            self._debt[account] = left
        else:
            del self._debt[account]

    def _release(self, entry: _Entry[TaskT]) -> None:
        del self._entries[entry.task]
        if entry.running:
            _decrement(self._running_by_account, entry.account)
        else:
            self._unwait(entry)

    def _unwait(self, entry: _Entry[TaskT]) -> None:
        _decrement(self._per_link, entry.link)
        _decrement(self._per_ip, entry.ip)


def _to_back(rotation: dict[str, _V], key: str | None) -> None:
    if key is not None and key in rotation:
        rotation[key] = rotation.pop(key)


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]

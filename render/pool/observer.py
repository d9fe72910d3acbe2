"""What the render pool tells an observer (vaultd's metrics), without importing it.

render/ never imports vaultd: the server passes an object with these methods to `RenderPool`;
the default one ignores everything. Each call is made on the event loop and must not block.
"""

from __future__ import annotations

from typing import Protocol


class PoolObserver(Protocol):
    def worker_started(self) -> None:
        """A worker process was forked."""

    def worker_crashed(self) -> None:
        """A worker died on its own (a crash, the OOM killer, a death before READY), as
        opposed to one the pool retired or killed for a timeout or a protocol violation."""

    def task_started(self, waited_seconds: float) -> None:
        """A task reached a worker after waiting this long in the queue."""

    def task_finished(self, seconds: float, outcome: str, account: str | None) -> None:
        """A worker is done with a task: `outcome` is done, timeout or crash."""


class IgnoreAll:
    """The observer of a pool nobody watches."""

    def worker_started(self) -> None:
        pass

    def worker_crashed(self) -> None:
        pass

    def task_started(self, waited_seconds: float) -> None:
        pass

    def task_finished(self, seconds: float, outcome: str, account: str | None) -> None:
        pass

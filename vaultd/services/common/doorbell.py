"""A process-local nudge from a writer to a background loop: "work is due now".

The webhook deliverer polls the outbox every `webhooks.poll_seconds`, which is what finds
retries and the messages other processes queued. A message this process queues as deliverable
now rings the bell of its database handle, and the deliverer listening on that handle starts
its round at once, so the first attempt is immediate (as Standard Webhooks expects) instead of
up to one poll late. A ring with nobody listening does nothing; a lost ring costs one poll.

Bells are keyed by the scope object (the process's `Db`), so two vaults in one test process
do not ring each other's loops; the wake runs on the listener's own event loop, whichever
thread rang."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

_lock = threading.Lock()
_listeners: dict[int, list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]]] = {}


def listen(scope: object, wake: Callable[[], None]) -> Callable[[], None]:
    """Call `wake` on the running loop whenever `scope` rings; returns what stops listening."""
    entry = (asyncio.get_running_loop(), wake)
    with _lock:
        _listeners.setdefault(id(scope), []).append(entry)

    def stop_listening() -> None:
        with _lock:
            entries = _listeners.get(id(scope), [])
            if entry in entries:
                entries.remove(entry)
            if not entries:
                _listeners.pop(id(scope), None)

    return stop_listening


def ring(scope: object) -> None:
    with _lock:
        entries = list(_listeners.get(id(scope), ()))
    for loop, wake in entries:
        if not loop.is_closed():
            loop.call_soon_threadsafe(wake)

"""Running tasks in the render pool, with pool failures turned into domain errors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, TypeVar

from render.pool.fair_queue import QueueRefused
from render.pool.render_pool import PoolBusy, RenderPool, TaskTimedOut, WorkerCrashed
from render.wire.model import PageOutOfRange, Unreadable
from vaultd.broker import BrokeredFile
from vaultd.errors import (
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    Unprocessable,
    VaultError,
)

T = TypeVar("T")
log = logging.getLogger("vaultd.render")


class ClientGone(VaultError):
    """The client closed its connection while its task waited: nobody reads the answer."""

    status = 499  # nginx's "client closed request"; never seen by anyone


class Departure:
    """Told when a request's client has gone (Tornado's on_connection_close): its task, if
    still waiting in the render queue, is dropped and never runs."""

    def __init__(self) -> None:
        self.gone = False
        self._callbacks: list[Callable[[], object]] = []

    def on_leave(self, callback: Callable[[], object]) -> None:
        if self.gone:
            callback()
        else:
            self._callbacks.append(callback)

    def leave(self) -> None:
        if not self.gone:
            self.gone = True
            callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                callback()


async def run_task(
    pool: RenderPool, fn: Callable[..., T], *args: Any, on_upload: bool = False,
    document: BrokeredFile | None = None, account: str | None = None, ip: str | None = None,
    background: bool = False,
) -> T:
    """Run `fn` in the pool. A crashed or timed-out worker is a 503 (retry with backoff), except
    where the caller knows the input is a fresh upload: then the file is to blame (422).
    `background`: the server's own work, run only on an idle worker and never in a request's
    way (`RenderPool.submit`)."""
    return await start_task(pool, fn, *args, on_upload=on_upload, document=document,
                            account=account, ip=ip, background=background)


def start_task(
    pool: RenderPool, fn: Callable[..., T], *args: Any, on_upload: bool = False,
    document: BrokeredFile | None = None, account: str | None = None,
    link: str | None = None, ip: str | None = None, departure: Departure | None = None,
    affinity: Hashable | None = None, background: bool = False,
) -> Coroutine[Any, Any, T]:
    """Submit `fn` now (a full queue is a 503, a link or client IP over its cap a 429, at once,
    before the caller does anything else); the returned coroutine waits for the result, with
    run_task's errors. `document`: the one file the worker may read, on a worker of that file's
    account; `account`: the account whose data the arguments carry (a leaked image), when there
    is no document; `link`, `ip`: the task's turn and caps in the fair queue; `departure`: told
    when the client has gone, which drops the task if it still waits (then ClientGone);
    `affinity`: prefer a worker that ran a task with this key (a page it may have kept)."""
    account = document.account if document is not None else account
    try:
        pending = pool.submit(fn, *args, account=account, document=document, link=link, ip=ip,
                              affinity=affinity, background=background)
    except PoolBusy:
        raise ServiceUnavailable("render queue is full; retry shortly", retry_after=2) from None
    except QueueRefused as exc:
        raise queue_refusal(exc) from None
    if departure is not None:
        departure.on_leave(pending.cancel)  # a running task finishes; its result is dropped
    return _outcome(pending, on_upload, departure)


async def _outcome(pending: asyncio.Future[T], on_upload: bool,
                   departure: Departure | None = None) -> T:
    try:
        return await pending
    except asyncio.CancelledError:
        if departure is not None and departure.gone and pending.cancelled():
            raise ClientGone("the client went away") from None
        raise
    except TaskTimedOut:
        if on_upload:
            # A fresh upload that cannot be validated in time would time out on every retry.
            raise Unprocessable("the file takes too long to process") from None
        raise ServiceUnavailable("rendering timed out; retry later", retry_after=5) from None
    except WorkerCrashed:
        if on_upload:
            raise Unprocessable("the file could not be processed") from None
        raise ServiceUnavailable(
            "the page could not be rendered; retry later", retry_after=5
        ) from None
    except MemoryError:
        # A document that exhausts its worker's memory cap is not one we can process.
        raise Unprocessable("the file needs more memory than a render may use") from None
    except Unreadable as exc:
        raise Unprocessable(str(exc) or "the file is unreadable") from None
    except PageOutOfRange:
        raise NotFound("page not found") from None
    except FileNotFoundError:
        # The blob went away between the link check and the render: the file was deleted.
        raise NotFound("file not found") from None
    except RuntimeError as exc:
        # A task error that could not cross the process boundary (tasks._portable). On an
        # upload, an odd file the validator choked on: the client's. On a page, the document
        # was validated when stored, so the fault is the server's (a worker that may start no
        # thread, say): never a 4xx.
        if on_upload:
            log.warning("render task failed: %s", str(exc)[:200])
            raise Unprocessable("the page could not be rendered") from None
        log.error("a page's render failed: %s", str(exc)[:200])
        raise ServiceUnavailable(
            "the page could not be rendered; retry later", retry_after=5) from None


def queue_refusal(exc: QueueRefused) -> VaultError:
    """The fair queue's refusal as a domain error: the caller's own share used up (per link or
    client IP) is a 429, a full queue a 503; both with Retry-After."""
    if exc.status == 429:
        return TooManyRequests(str(exc), retry_after=exc.retry_after)
    return ServiceUnavailable(str(exc), retry_after=exc.retry_after)

"""A request's database deadline: a read that waits too long fails, a write is waited for.

`server.db_deadline_seconds` bounds what a request spends in the database (`pymongo.timeout`:
each call carries what remains as its `maxTimeMS`, and the driver stops waiting for its answer
when it runs out), so that a call stuck behind another tenant's long operation fails alone and
is answered 503 "database unavailable; retry shortly". That answer is true only of a call the
database never ran. A write that waits in the database's queue past the deadline is still made
when its turn comes (SecantusDB runs one operation at a time, and a client that stops waiting
does not withdraw what it sent); told to retry, a client would make it twice. So, inside a
request (`request_deadline`):

- a write is sent only while the deadline has not passed; past it, the request fails as a read
  would, having sent nothing;
- once sent, a write is waited for without the deadline, and so is the rest of the request
  (`pymongo.timeout(None)` switches the driver's deadline off, which PyMongo's documentation
  does not promise: tests/test_scale_deadline.py fails if it stops; the client's
  `socketTimeoutMS` still bounds each wait): the request's first write is where it commits;
- a database error after the request's first write was sent (`wrote_in_request`) means the
  change may have been made, and the client is told so instead of "retry".

Every collection of `vaultd.db.Db` is a `Collection`, so a new write needs nothing more. Work a
request starts and does not wait for outlives it: `detached` runs it without the request's
deadline (a task inherits its starter's context, and with it the deadline).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from typing import Any, TypeVar

import pymongo
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import ExecutionTimeout, ServerSelectionTimeoutError
from pymongo.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)

Doc = TypeVar("Doc", bound="Mapping[str, Any]")
T = TypeVar("T")


@dataclass
class _Request:
    ends_at: float  # time.monotonic(); inf when the request has no deadline
    wrote: bool = False  # a write was sent: an error from here on may follow a change made


_REQUEST: ContextVar[_Request | None] = ContextVar("vaultd_db_request", default=None)


@contextmanager
def request_deadline(seconds: float | None) -> Iterator[None]:
    """The database work of one request: at most `seconds` of it (None: no deadline, but its
    writes are still remembered, for `wrote_in_request`)."""
    token = _REQUEST.set(_Request(time.monotonic() + seconds if seconds else float("inf")))
    try:
        if seconds is None:
            yield
        else:
            with pymongo.timeout(seconds):
                yield
    finally:
        _REQUEST.reset(token)


@contextmanager
def part_deadline(seconds: float) -> Iterator[None]:
    """A deadline for one stretch of a request that has none of its own (an export's reads, a
    page at a time); what the request wrote before or writes inside is still remembered."""
    request = _REQUEST.get()
    ends_at = request.ends_at if request is not None else None
    if request is not None:
        request.ends_at = min(request.ends_at, time.monotonic() + seconds)
    try:
        with pymongo.timeout(seconds):
            yield
    finally:
        if request is not None and ends_at is not None:  # past a write, none again
            request.ends_at = float("inf") if request.wrote else ends_at


def wrote_in_request() -> bool:
    """Whether this request has sent a write: an error from here on may follow a change made."""
    request = _REQUEST.get()
    return request is not None and request.wrote


def detached(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """`work` as a task of its own, outside any request's deadline (what else the starter's
    context holds, who acts for instance, it keeps)."""
    context = copy_context()
    context.run(_outside_request)
    return asyncio.get_running_loop().create_task(work, context=context)


def _outside_request() -> None:
    _REQUEST.set(None)
    pymongo.timeout(None).__enter__()  # never left: the context is the new task's alone


class UnsentWrite(ExecutionTimeout):
    """The request's deadline passed before its write was sent: nothing of it was made."""


@contextmanager
def _committing() -> Iterator[None]:
    request = _REQUEST.get()
    if request is None:  # background work: the client's own timeouts alone
        yield
        return
    if time.monotonic() >= request.ends_at:
        raise UnsentWrite("the request's database deadline passed before its write was sent", 50)
    first, ends_at = not request.wrote, request.ends_at
    request.wrote = True
    request.ends_at = float("inf")
    # The rest of the request too: once a change is sent, stopping part way would leave it half
    # done. Left only if this write was never sent; otherwise `request_deadline`'s own block
    # resets the context's deadline when the request ends (a ContextVar token restores what
    # was before it).
    unlimited = pymongo.timeout(None)
    unlimited.__enter__()
    try:
        yield
    except ServerSelectionTimeoutError:
        if first:  # no server was found for it: nothing was sent, a retry is safe, and the
            # rest of the request keeps its deadline
            request.wrote, request.ends_at = False, ends_at
            unlimited.__exit__(None, None, None)
        raise


class Collection(AsyncCollection[Doc]):
    """A collection whose writes follow the rules above; reads are PyMongo's own."""

    async def insert_one(self, *args: Any, **kwargs: Any) -> InsertOneResult:
        with _committing():
            return await super().insert_one(*args, **kwargs)

    async def insert_many(self, *args: Any, **kwargs: Any) -> InsertManyResult:
        with _committing():
            return await super().insert_many(*args, **kwargs)

    async def update_one(self, *args: Any, **kwargs: Any) -> UpdateResult:
        with _committing():
            return await super().update_one(*args, **kwargs)

    async def update_many(self, *args: Any, **kwargs: Any) -> UpdateResult:
        with _committing():
            return await super().update_many(*args, **kwargs)

    async def replace_one(self, *args: Any, **kwargs: Any) -> UpdateResult:
        with _committing():
            return await super().replace_one(*args, **kwargs)

    async def delete_one(self, *args: Any, **kwargs: Any) -> DeleteResult:
        with _committing():
            return await super().delete_one(*args, **kwargs)

    async def delete_many(self, *args: Any, **kwargs: Any) -> DeleteResult:
        with _committing():
            return await super().delete_many(*args, **kwargs)

    async def bulk_write(self, *args: Any, **kwargs: Any) -> BulkWriteResult:
        with _committing():
            return await super().bulk_write(*args, **kwargs)

    async def find_one_and_update(self, *args: Any, **kwargs: Any) -> Doc | None:
        with _committing():
            return await super().find_one_and_update(*args, **kwargs)

    async def find_one_and_replace(self, *args: Any, **kwargs: Any) -> Doc | None:
        with _committing():
            return await super().find_one_and_replace(*args, **kwargs)

    async def find_one_and_delete(self, *args: Any, **kwargs: Any) -> Doc | None:
        with _committing():
            return await super().find_one_and_delete(*args, **kwargs)

"""Per-request guards that sit between Tornado's HTTP/1 connection and the application.

- **Small bodies for small routes**: every route but the upload takes JSON of at most
  `JSON_BODY_LIMIT` bytes. A larger declared Content-Length, or a chunked body that grows past
  it, is refused with the API's 413 JSON before any byte reaches the application (nothing is
  buffered: refused bytes are read and dropped up to `DRAIN_LIMIT`, so clients that send the
  whole body before reading still see the answer; past that the connection is closed).
- **An idle timeout instead of a total one**: a body that stops arriving for
  `idle_seconds` has its connection closed (the upload handler then discards what it stored),
  while a slow but steady upload takes as long as it needs. Time the application spends
  awaiting its own work (prepare, encrypting a chunk) is not counted as client idleness.
- **Answers before the body**: a streamed route may answer from `prepare`, as soon as the
  headers are read (an upload refused by its plan). The application writes through
  `AppConnection`, whose `finish` waits for the body: the rest of the body is read and dropped
  (up to the limit the route set), so the connection stays usable and clients that send
  everything before reading still get the answer; a larger declared body is answered and the
  connection closed. A client that sent `Expect: 100-continue` gets the answer instead of the
  `100 Continue` (and may send the body or close, as RFC 9110 10.1.1 lets it).

Tornado's `body_timeout` covers the whole body, its `max_body_size` answers a bare 400, and an
answer finished before the body makes it close the connection, so all three are replaced here
through the public delegate and connection interfaces (`HTTPMessageDelegate`, `HTTPConnection`).
"""

from __future__ import annotations

import json
import logging
from asyncio import Future
from collections.abc import Awaitable, Callable
from typing import Any

from tornado.http1connection import HTTP1Connection
from tornado.httputil import (
    HTTPConnection,
    HTTPHeaders,
    HTTPMessageDelegate,
    RequestStartLine,
    ResponseStartLine,
)
from tornado.ioloop import IOLoop
from tornado.iostream import IOStream

log = logging.getLogger("vaultd.connections")

JSON_BODY_LIMIT = 16 << 10
DRAIN_LIMIT = 1 << 20  # refused bodies up to this size are read (and dropped) before answering
# Streamed routes: each handler checks the key first, then sets its own limit.
# The console's mirrors of the two API routes stream as the routes do (web.console_api).
UPLOAD_PATHS = frozenset({"/v1/files", "/v1/trace", "/console/trace", "/console/api/files",
                          "/console/api/trace"})
# Tornado's own body limit once the guard drains: it would write a bare 400 after our answer.
_NO_TORNADO_LIMIT = 1 << 62


def json_too_large_message() -> str:
    return f"request body larger than the {JSON_BODY_LIMIT} byte limit"


class RequestGuard(HTTPMessageDelegate):
    """Wraps the application's delegate for one request (see the module docstring). The
    application's delegate is made with `app_connection` and set as `inner` afterwards."""

    inner: HTTPMessageDelegate

    def __init__(self, connection: HTTP1Connection, idle_seconds: float) -> None:
        self.connection = connection
        self.app_connection = AppConnection(self)
        self.idle_seconds = idle_seconds
        self.limit: int | None = None  # None: no JSON limit (the upload route)
        self.drain_limit = DRAIN_LIMIT  # what the route lets us read of a body it refused
        self.declared: int | None = None
        self.received = 0
        self.refused = False
        self.answered = False
        self.body_done = False  # Tornado has read the whole body
        self.app_finished = False  # the application has written its whole answer
        self.closing = False  # its answer said Connection: close
        self._timer: object | None = None

    # --- HTTPMessageDelegate -----------------------------------------------------------------

    def headers_received(
        self, start_line: RequestStartLine | ResponseStartLine, headers: HTTPHeaders
    ) -> Awaitable[None] | None:
        assert isinstance(start_line, RequestStartLine)
        path = start_line.path.split("?", 1)[0]
        self.declared = declared = _declared_length(headers)
        if not (start_line.method in ("POST", "PUT") and path in UPLOAD_PATHS):
            self.limit = JSON_BODY_LIMIT
            self.connection.set_max_body_size(DRAIN_LIMIT + 1)
            if declared is not None and declared > JSON_BODY_LIMIT:
                self.refused = True
                if declared > DRAIN_LIMIT:
                    # Tornado would answer a bare 400 after ours; the read fails quietly instead.
                    self.connection.set_max_body_size(declared)
                    self._answer_too_large(close=True)
                    return None
                self._arm()
                return None
        if _has_body(headers):
            self._arm()
        result = self.inner.headers_received(start_line, headers)
        if result is None:
            return None
        self._disarm()
        return self._after_headers(result, headers)

    async def _after_headers(self, result: Awaitable[None], headers: HTTPHeaders) -> None:
        try:
            await result
        finally:
            if self.app_finished and "Expect" in headers:
                # Answered at the headers: Tornado would now send `100 Continue` after it.
                del headers["Expect"]
            self._rearm_if_open()

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        self._arm()
        self.received += len(chunk)
        if self.app_finished:  # answered before the body: it is dropped
            if self.received > self.drain_limit:
                self.connection.close()
            return None
        if self.limit is not None and self.received > self.limit and not self.refused:
            self.refused = True
            self.inner.on_connection_close()  # it saw the headers: let it drop what it holds
        if self.refused:
            if self.received > DRAIN_LIMIT:
                self._answer_too_large(close=True)
            return None
        return self._paused(self.inner.data_received(chunk))

    def finish(self) -> None:
        self._disarm()
        self.body_done = True
        if self.refused:
            self._answer_too_large(close=False)
            return
        if self.app_finished:
            self.connection.finish()  # the answer went out before the body: now it is complete
            return
        self.inner.finish()

    def on_connection_close(self) -> None:
        self._disarm()
        if not self.refused and not self.app_finished:
            self.inner.on_connection_close()

    # --- the application's answer (through AppConnection) ------------------------------------

    def answer_headers(self, headers: HTTPHeaders) -> None:
        if self.body_done:
            return
        if self.declared is not None and self.declared > self.drain_limit:
            headers["Connection"] = "close"  # answered before a body too large to drain
        self.closing = headers.get("Connection", "").lower() == "close"

    def answer_finished(self) -> None:
        self.app_finished = True
        if self.body_done:
            self.connection.finish()
            return
        # Before (or while) the body arrives: read and drop it ourselves, without Tornado's 400.
        self.connection.set_max_body_size(_NO_TORNADO_LIMIT)
        if self.closing:
            self.connection.finish()  # Tornado closes the connection once the answer is out

    # --- the idle timer ----------------------------------------------------------------------

    def _arm(self) -> None:
        self._disarm()
        self._timer = IOLoop.current().call_later(self.idle_seconds, self._idle)

    def _disarm(self) -> None:
        if self._timer is not None:
            IOLoop.current().remove_timeout(self._timer)
            self._timer = None

    def _idle(self) -> None:
        self._timer = None
        log.info("request body idle for %g s: connection closed", self.idle_seconds)
        self.connection.close()

    def _paused(self, result: Awaitable[None] | None) -> Awaitable[None] | None:
        """While the application awaits its own work the client is not idle."""
        if result is None:
            return None
        self._disarm()
        return self._rearm_after(result)

    async def _rearm_after(self, result: Awaitable[None]) -> None:
        try:
            await result
        finally:
            self._rearm_if_open()

    def _rearm_if_open(self) -> None:
        stream = self.connection.stream
        if stream is not None and not stream.closed() and not self.body_done:
            self._arm()

    # --- the 413 answer ----------------------------------------------------------------------

    def _answer_too_large(self, close: bool) -> None:
        if self.answered:
            return
        self.answered = True
        self._disarm()
        message = json_too_large_message()
        body = json.dumps({"error": message}).encode()  # as every other error body
        headers = HTTPHeaders(
            {
                "Content-Type": "application/json; charset=utf-8",
                "Content-Length": str(len(body)),
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            }
        )
        if close:
            headers["Connection"] = "close"
        start = ResponseStartLine("HTTP/1.1", 413, "Payload Too Large")
        self.connection.write_headers(start, headers, body)
        self.connection.finish()
        if close:
            self.connection.close()


def _declared_length(headers: HTTPHeaders) -> int | None:
    raw = headers.get("Content-Length")
    if raw is None or not raw.strip().isdigit():
        return None  # Tornado itself rejects a malformed length with 400
    return int(raw.strip())


def _has_body(headers: HTTPHeaders) -> bool:
    return "Transfer-Encoding" in headers or (_declared_length(headers) or 0) > 0


class AppConnection(HTTPConnection):
    """The request's connection as the application sees it: Tornado's, except that `finish`
    lets the guard complete an answer written before the body was read."""

    def __init__(self, guard: RequestGuard) -> None:
        self.guard = guard
        self.real = guard.connection

    @property
    def context(self) -> object:  # HTTPServerRequest reads the client's address here
        return self.real.context

    @property
    def stream(self) -> IOStream:
        return self.real.stream

    def write_headers(self, start_line: RequestStartLine | ResponseStartLine,
                      headers: HTTPHeaders, chunk: bytes | None = None) -> Future[None]:
        self.guard.answer_headers(headers)
        return self.real.write_headers(start_line, headers, chunk)

    def write(self, chunk: bytes) -> Future[None]:
        return self.real.write(chunk)

    def finish(self) -> None:
        self.guard.answer_finished()

    def set_close_callback(self, callback: Callable[[], None] | None) -> None:
        self.real.set_close_callback(callback)

    def set_max_body_size(self, max_body_size: int) -> None:
        self.guard.drain_limit = max_body_size
        self.real.set_max_body_size(max_body_size)

    def detach(self) -> IOStream:
        return self.real.detach()


def guard_for(connection: Any, idle_seconds: float) -> RequestGuard | None:
    """A guard for an HTTP/1 connection; the application's delegate is made with
    `guard.app_connection` and given to it as `guard.inner`."""
    if not isinstance(connection, HTTP1Connection):
        return None
    return RequestGuard(connection, idle_seconds)

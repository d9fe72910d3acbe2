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

Tornado's `body_timeout` covers the whole body and its `max_body_size` answers a bare 400, so
both are replaced here through the public delegate interface (`HTTPMessageDelegate`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable
from typing import Any

from tornado.http1connection import HTTP1Connection
from tornado.httputil import (
    HTTPHeaders,
    HTTPMessageDelegate,
    RequestStartLine,
    ResponseStartLine,
)
from tornado.ioloop import IOLoop

log = logging.getLogger("vaultd.connections")

JSON_BODY_LIMIT = 16 << 10
DRAIN_LIMIT = 1 << 20  # refused bodies up to this size are read (and dropped) before answering
# Streamed routes: each handler checks the key first, then sets its own limit.
UPLOAD_PATHS = frozenset({"/v1/files", "/v1/trace"})


def json_too_large_message() -> str:
    return f"request body larger than the {JSON_BODY_LIMIT} byte limit"


class RequestGuard(HTTPMessageDelegate):
    """Wraps the application's delegate for one request (see the module docstring)."""

    def __init__(
        self, inner: HTTPMessageDelegate, connection: HTTP1Connection, idle_seconds: float
    ) -> None:
        self.inner = inner
        self.connection = connection
        self.idle_seconds = idle_seconds
        self.limit: int | None = None  # None: no JSON limit (the upload route)
        self.received = 0
        self.refused = False
        self.answered = False
        self._timer: object | None = None

    # --- HTTPMessageDelegate -----------------------------------------------------------------

    def headers_received(
        self, start_line: RequestStartLine | ResponseStartLine, headers: HTTPHeaders
    ) -> Awaitable[None] | None:
        assert isinstance(start_line, RequestStartLine)
        path = start_line.path.split("?", 1)[0]
        if not (start_line.method in ("POST", "PUT") and path in UPLOAD_PATHS):
            self.limit = JSON_BODY_LIMIT
            self.connection.set_max_body_size(DRAIN_LIMIT + 1)
            declared = _declared_length(headers)
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
        return self._paused(self.inner.headers_received(start_line, headers))

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        self._arm()
        self.received += len(chunk)
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
        if self.refused:
            self._answer_too_large(close=False)
            return
        self.inner.finish()

    def on_connection_close(self) -> None:
        self._disarm()
        if not self.refused:
            self.inner.on_connection_close()

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
            stream = self.connection.stream
            if stream is not None and not stream.closed():
                self._arm()

    # --- the 413 answer ----------------------------------------------------------------------

    def _answer_too_large(self, close: bool) -> None:
        if self.answered:
            return
        self.answered = True
        self._disarm()
        message = json_too_large_message()
        body = json.dumps({"error": message, "statusCode": 413, "message": message}).encode()
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


def wrap(inner: HTTPMessageDelegate, connection: Any, idle_seconds: float) -> HTTPMessageDelegate:
    if not isinstance(connection, HTTP1Connection):
        return inner
    return RequestGuard(inner, connection, idle_seconds)

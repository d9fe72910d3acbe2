"""A real HTTP receiver for webhook tests: records every request and checks its signature with
the `standardwebhooks` verifier, the way an account's own server would."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


def distinct(received: list[Received]) -> list[Received]:
    """One request per message (its `webhook-id`), the first to arrive. Delivery is at least
    once: an attempt that outlasts its lease (6 s in tests, `FAST_RETRIES`) on a loaded
    machine is sent again under the same id, and the same body: checked here, so a second
    message under a reused id still fails the test."""
    first: dict[str, Received] = {}
    for request in received:
        kept = first.setdefault(request.headers["webhook-id"], request)
        assert kept.body == request.body, f"two bodies under one webhook-id: {kept} {request}"
    return list(first.values())


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"


@dataclass
class Receiver:
    port: int = 0
    secret: str | None = None
    received: list[Received] = field(default_factory=list)
    # Decides the reply to the n-th request (0-based); default: 200.
    reply: Callable[[int], Reply] = lambda n: Reply()
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def record(self, path: str, headers: dict[str, str], body: bytes) -> Reply:
        verified = False
        if self.secret:
            try:
                Webhook(self.secret).verify(body, headers)
                verified = True
            except WebhookVerificationError:
                verified = False
        with self.lock:
            number = len(self.received)
            self.received.append(Received(path, headers, body, verified))
        return self.reply(number)

    def wait_for(self, predicate: Callable[[list[Received]], bool],
                 timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                seen = list(self.received)
            if predicate(seen):
                return seen
            time.sleep(0.05)
        raise AssertionError(f"receiver did not get what was expected; got {len(seen)} requests:"
                             f" {[r.event.get('type') for r in seen]}")

    def of_type(self, event_type: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.event.get("type") == event_type]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if len(body) < length:
                # The sender went away mid-request (a vaultd killed while delivering): nothing
                # was delivered, and the message is sent again; an account's server would not
                # take half a body either.
                self.close_connection = True
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = receiver.record(self.path, headers, body)
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def running_receiver(port: int = 0) -> Iterator[Receiver]:
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(receiver))
    receiver.port = int(server.server_address[1])
    # shutdown() waits for serve_forever's next poll: a short poll ends each test sooner
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()

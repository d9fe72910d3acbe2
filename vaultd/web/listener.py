"""Accepting connections without falling over at the file-descriptor limit.

Tornado's accept loop (`tornado.netutil.add_accept_handler`) handles only EWOULDBLOCK and
ECONNABORTED: at EMFILE the exception reaches the IOLoop, which logs a traceback, and since the
listening socket stays readable it does so again at once (88,000 tracebacks in 12 s were
measured). It has no cap on open connections either. Its documented way in is the socket it is
given: `GuardedListener` is a listening socket whose `accept()`

- refuses a connection over `max_connections` with a short JSON 503 and closes it;
- at EMFILE/ENFILE frees a reserved descriptor, accepts the waiting connection, refuses it and
  takes the reserve back, so the backlog drains instead of spinning the loop;
- raises ConnectionAbortedError for a refused connection, which Tornado's loop skips;
- logs refusals at most once per `LOG_EVERY_SECONDS`, with how many there were.

Accepted sockets are `CountedSocket`s that give their slot back when closed.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import resource
import socket
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("vaultd.connections")

LOG_EVERY_SECONDS = 10.0
# Descriptors kept for everything but client connections: database, blobs, render pipes, logs.
FD_HEADROOM = 128


def _refusal(message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        "Retry-After: 1\r\nConnection: close\r\nCache-Control: no-store\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


TOO_MANY_CONNECTIONS = "too many open connections; retry shortly"
_REFUSE_BUSY = _refusal(TOO_MANY_CONNECTIONS)


@dataclass
class RateLimitedLog:
    """One warning per reason and interval, counting the events it stands for."""

    interval: float = LOG_EVERY_SECONDS
    _last: dict[str, float] = field(default_factory=dict)
    _count: dict[str, int] = field(default_factory=dict)

    def note(self, reason: str, message: str) -> None:
        self._count[reason] = self._count.get(reason, 0) + 1
        now = time.monotonic()
        if now - self._last.get(reason, -self.interval) < self.interval:
            return
        count, self._count[reason] = self._count[reason], 0
        self._last[reason] = now
        log.warning("%s (%d refused since the last such line)", message, count)


@dataclass
class ConnectionGate:
    """Counts open client connections against the cap."""

    max_connections: int
    open: int = 0
    refusals: RateLimitedLog = field(default_factory=RateLimitedLog)
    _reserve: int | None = None

    def __post_init__(self) -> None:
        self._take_reserve()

    def _take_reserve(self) -> None:
        if self._reserve is None:
            try:
                self._reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._reserve = None

    def shed(self, listener: socket.socket) -> bool:
        """At EMFILE: use the reserved descriptor to accept one waiting connection and refuse it.
        False when there was nothing to shed (or no reserve), so the caller stops accepting."""
        self._take_reserve()
        if self._reserve is None:
            return False
        os.close(self._reserve)
        self._reserve = None
        try:
            conn, _ = socket.socket.accept(listener)
        except OSError:
            self._take_reserve()
            return False
        refuse(conn)  # closed first, so that the reserve can be taken back
        self._take_reserve()
        self.refusals.note("emfile", "refusing connections: out of file descriptors")
        return True

    def admit(self) -> bool:
        if self.open >= self.max_connections:
            self.refusals.note(
                "cap", f"refusing connections: {self.open} open (server.max_connections)"
            )
            return False
        self.open += 1
        return True

    def release(self) -> None:
        self.open -= 1

    def close(self) -> None:
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None


def refuse(conn: socket.socket) -> None:
    """Read what the client already sent (so closing does not reset the connection before it
    reads the answer), answer 503 and close. Best effort: never blocks."""
    try:
        conn.setblocking(False)
        conn.recv(1 << 16)
    except OSError:
        pass
    try:
        conn.send(_REFUSE_BUSY)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    conn.close()


class CountedSocket(socket.socket):
    """An accepted connection that gives its slot back to the gate once, when closed."""

    gate: ConnectionGate | None = None

    @classmethod
    def adopt(cls, conn: socket.socket, gate: ConnectionGate) -> CountedSocket:
        counted = cls(conn.family, conn.type, conn.proto, fileno=conn.detach())
        counted.gate = gate
        return counted

    def close(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.release()
        super().close()


class GuardedListener(socket.socket):
    """A listening socket whose accept() enforces the gate (see the module docstring)."""

    gate: ConnectionGate

    @classmethod
    def wrap(cls, sock: socket.socket, gate: ConnectionGate) -> GuardedListener:
        timeout = sock.gettimeout()
        listener = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        listener.settimeout(timeout)
        listener.gate = gate
        return listener

    def accept(self) -> tuple[socket.socket, Any]:
        try:
            conn, address = super().accept()
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            if self.gate.shed(self):
                raise ConnectionAbortedError from None  # Tornado's loop goes on to the next
            raise BlockingIOError from None  # nothing more to take now: back to the loop
        if not self.gate.admit():
            refuse(conn)
            raise ConnectionAbortedError
        return CountedSocket.adopt(conn, self.gate), address


def raise_nofile_limit() -> int:
    """Raise the soft open-file limit to the hard one; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= hard:
        return int(soft if soft != resource.RLIM_INFINITY else hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return int(soft)
    return int(hard)


def effective_max_connections(configured: int, nofile: int) -> int:
    """The configured cap, lowered so that connections cannot take the last descriptors."""
    room = max(16, nofile - FD_HEADROOM)
    if configured > room:
        log.warning(
            "server.max_connections %d lowered to %d: the open-file limit is %d",
            configured, room, nofile,
        )
        return room
    return configured

"""vaultd's HTTP server: Tornado's, with connection limits that hold at the descriptor limit.

Subclassed through Tornado's public surface only: `add_sockets` receives guarded listening
sockets (connection cap, EMFILE shedding, rate-limited log lines: `vaultd.web.listener`) and
`start_request` wraps each request's delegate (small JSON bodies, body idle timeout:
`vaultd.web.body_guard`). The header timeout is Tornado's own (`idle_connection_timeout`, which
also bounds how long a kept-alive connection may sit idle between requests).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass

from tornado import httputil
from tornado.httpserver import HTTPServer
from tornado.web import Application

from vaultd.web import body_guard
from vaultd.web.listener import ConnectionGate, GuardedListener


@dataclass(frozen=True)
class ServerLimits:
    max_connections: int
    header_timeout_seconds: float
    body_idle_timeout_seconds: float


class VaultHTTPServer(HTTPServer):
    gate: ConnectionGate
    body_idle_seconds: float

    def add_sockets(self, sockets: Iterable[socket.socket]) -> None:
        super().add_sockets([GuardedListener.wrap(sock, self.gate) for sock in sockets])

    def start_request(
        self, server_conn: object, request_conn: httputil.HTTPConnection
    ) -> httputil.HTTPMessageDelegate:
        guard = body_guard.guard_for(request_conn, self.body_idle_seconds)
        if guard is None:
            return super().start_request(server_conn, request_conn)
        guard.inner = super().start_request(server_conn, guard.app_connection)
        return guard


def make_server(app: Application, limits: ServerLimits) -> VaultHTTPServer:
    # max_body_size only bounds what body_guard drains; uploads raise it per request.
    server = VaultHTTPServer(
        app,
        max_body_size=body_guard.DRAIN_LIMIT + 1,
        xheaders=False,
        body_timeout=None,
        idle_connection_timeout=limits.header_timeout_seconds,
    )
    server.gate = ConnectionGate(limits.max_connections)
    server.body_idle_seconds = limits.body_idle_timeout_seconds
    return server

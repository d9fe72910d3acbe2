"""The scrape endpoint, `GET /metrics`, on its own address: never on the public port."""

from __future__ import annotations

import json
import logging
import socket

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import Application, RequestHandler

from render.pool.render_pool import RenderPool
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.metrics.registry import Metrics
from vaultd.metrics.render_pool import watch_pool
from vaultd.metrics.webhooks import refresh_oldest_pending
from vaultd.startup import StartupError

log = logging.getLogger("vaultd.metrics")


class MetricsHandler(RequestHandler):
    def initialize(self, metrics: Metrics, db: Db) -> None:
        self.metrics, self.db = metrics, db

    def set_default_headers(self) -> None:
        self.clear_header("Server")
        self.set_header("Cache-Control", "no-store")

    async def get(self) -> None:
        await refresh_oldest_pending(self.metrics, self.db)
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(generate_latest(self.metrics.registry))


class NotMetricsHandler(RequestHandler):
    """Anything else: the same JSON 404 as the public port's unknown routes."""

    def prepare(self) -> None:
        self.set_status(404)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps({"error": "no such endpoint"}))


def bind_metrics(host: str, port: int) -> list[socket.socket]:
    """Bound at start-up with the public port, so a taken address stops vaultd at once."""
    return bind_sockets(port, host or "127.0.0.1")


def serve_metrics(sockets: list[socket.socket], metrics: Metrics, db: Db) -> HTTPServer:
    app = Application([(r"/metrics", MetricsHandler, {"metrics": metrics, "db": db})],
                      default_handler_class=NotMetricsHandler, log_function=lambda _: None)
    server = HTTPServer(app, xheaders=False)
    server.add_sockets(sockets)
    return server


def start_metrics(settings: Settings, metrics: Metrics, db: Db, pool: RenderPool
                  ) -> HTTPServer | None:
    """Serve /metrics when `metrics.port` is set (off by default); None when off."""
    watch_pool(metrics, pool)
    if not settings.metrics_port:
        return None
    try:
        sockets = bind_metrics(settings.metrics_host, settings.metrics_port)
    except OSError as exc:
        raise StartupError(
            f"cannot listen for metrics on {settings.metrics_host}:{settings.metrics_port}: "
            f"{exc.strerror or exc} (set VAULTD_METRICS_PORT or VAULTD_METRICS_HOST)") from None
    port = int(sockets[0].getsockname()[1])
    log.info("metrics on http://%s:%d/metrics", settings.metrics_host, port)
    return serve_metrics(sockets, metrics, db)

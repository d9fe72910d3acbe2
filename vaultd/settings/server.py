"""The HTTP server: where it listens, its data directory, its limits and its stop."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import (
    boolean,
    choice,
    integer,
    networks,
    number,
    path,
    port_or_off,
    text,
    url,
)


@dataclass(frozen=True)
class ServerSettings:
    host: str = setting(
        "host", text, "127.0.0.1", "VAULTD_HOST",
        "Address to listen on.")
    port: int = setting(
        "port", integer(0, 65535), 8080, "VAULTD_PORT",
        "TCP port (0 picks a free one).")
    data_dir: str = setting(
        "data_dir", path, "./vault-data", "VAULTD_DATA_DIR",
        "Directory for the embedded database, local blobs and the master key file.")
    public_url: str = setting(
        "public_url", url, "", "VAULTD_PUBLIC_URL",
        "Viewer address used in link URLs ({viewer_url}); empty: http://host:port.")
    log_level: str = setting(
        "log_level", choice("DEBUG", "INFO", "WARNING", "ERROR"), "INFO", "VAULTD_LOG_LEVEL",
        "Logging level.")
    server_max_connections: int = setting(
        "server.max_connections", integer(16, 1_000_000), 4096, "VAULTD_MAX_CONNECTIONS",
        "Open client connections; more are answered 503 and closed (lowered to fit NOFILE).")
    server_header_timeout_seconds: float = setting(
        "server.header_timeout_seconds", number(0.5, 600), 10.0, "VAULTD_HEADER_TIMEOUT_SECONDS",
        "Time allowed for a request's headers, and for an idle kept-alive connection.")
    server_body_idle_timeout_seconds: float = setting(
        "server.body_idle_timeout_seconds", number(0.5, 3600), 30.0,
        "VAULTD_BODY_IDLE_TIMEOUT_SECONDS",
        "A request body that stops arriving this long is cut off (a slow steady one is not).")
    server_shutdown_grace_seconds: float = setting(
        "server.shutdown_grace_seconds", number(0, 3600), 10.0, "VAULTD_SHUTDOWN_GRACE_SECONDS",
        "On SIGTERM or SIGINT: how long requests in flight may finish before the rest are cut.")
    server_db_deadline_seconds: float = setting(
        "server.db_deadline_seconds", number(0.5, 600), 2.0, "VAULTD_DB_DEADLINE_SECONDS",
        "Time a request's database reads may take in all (sent as maxTimeMS); one that overruns "
        "is answered 503 'database unavailable; retry shortly', as is one that finds no "
        "database within it. A write once sent is waited for (the database makes it anyway). "
        "The routes that wait on a render, a body or a job have none. "
        "Raise it on a slow or loaded host.")
    server_fair_share: float = setting(
        "server.fair_share", number(0.05, 1), 0.25, "VAULTD_FAIR_SHARE",
        "While another account's pages are being read, the part of the time one account's API "
        "calls and bulk jobs may keep vaultd busy (past a 0.25 s burst; each call held at most "
        "0.5 s). 1: never held.")
    proxy_trusted: tuple[str, ...] = setting(
        "proxy.trusted", networks, (), "VAULTD_TRUSTED_PROXIES",
        "Networks whose X-Forwarded-For / X-Real-IP the hosted viewer believes.")
    metrics_host: str = setting(
        "metrics.host", text, "127.0.0.1", "VAULTD_METRICS_HOST",
        "Address of the Prometheus /metrics listener (never the public port).")
    metrics_port: int = setting(
        "metrics.port", port_or_off, 0, "VAULTD_METRICS_PORT",
        "Port of the /metrics listener; 0 or empty: no metrics listener (the default).")
    metrics_per_account: bool = setting(
        "metrics.per_account", boolean, False, "VAULTD_METRICS_PER_ACCOUNT",
        "Label render times and upload bytes by account id (one series per account).")

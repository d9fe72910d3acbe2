"""vaultd's entry point: a short list of named steps, and teardown in `finally`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.ioloop import PeriodicCallback
from tornado.netutil import bind_sockets

from backends.base import BackendUnavailable
from render.pool import RenderPool
from render.sandbox.report import SandboxUnavailable
from vaultd.config import ConfigError, Settings, load_settings, read_config_file
from vaultd.embedded_db import EmbeddedDbError
from vaultd.logs import setup_logging
from vaultd.runtime import KeyringSource, make_backend, open_database
from vaultd.services import recovery
from vaultd.services.blobs import BlobStore
from vaultd.web.app import make_app
from vaultd.web.context import AppContext

log = logging.getLogger("vaultd")

JSON_BODY_LIMIT = 1 << 20  # uploads raise their own connection's limit in prepare()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vaultd", description="Encrypted document vault server.")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", help="TCP port (default 8080; 0 picks a free one)")
    parser.add_argument("--data-dir", help="data directory (default ./vault-data)")
    parser.add_argument("--config", help="TOML configuration file")
    return parser.parse_args(argv)


def build_settings(args: argparse.Namespace) -> Settings:
    file_values = read_config_file(args.config) if args.config else {}
    flags = {"host": args.host, "port": args.port, "data_dir": args.data_dir}
    return load_settings(file_values, flags=flags)


def make_pool(settings: Settings) -> RenderPool:
    return RenderPool(
        workers=settings.render_workers,
        queue_size=settings.render_queue_size,
        timeout_seconds=settings.render_timeout_seconds,
        max_tasks_per_worker=settings.render_max_tasks_per_worker,
        memory_limit_bytes=settings.render_memory_limit_mb << 20,
        sandbox=settings.render_sandbox,
    )


async def serve(settings: Settings) -> None:
    settings.data_path.mkdir(parents=True, exist_ok=True)
    keyrings = KeyringSource(settings)
    backend = make_backend(settings)  # config errors surface before anything is started
    database = await open_database(settings)
    pool: RenderPool | None = None
    instance_id = recovery.new_instance_id()
    heartbeat: PeriodicCallback | None = None
    try:
        await start_backend(backend)
        pool = make_pool(settings)
        await pool.wait_ready()  # "required" and a sandbox layer missing: refuse to start
        store = BlobStore(backend, keyrings.current(), keyrings.current)
        await recovery.heartbeat(database.db, instance_id)
        await recovery.recover(database.db, store)
        ctx = AppContext(settings, database.db, store, pool, instance_id, "")
        server, port = listen(settings, ctx)
        heartbeat = start_housekeeping(database.db, store, instance_id)
        log.info("vaultd listening on http://%s:%d (viewer %s)", settings.host, port,
                 settings.viewer_url(port))
        print(f"vaultd listening on http://{settings.host}:{port}", flush=True)
        await wait_for_signal()
        await drain(server, ctx)
    finally:
        if heartbeat is not None:
            heartbeat.stop()
        await recovery.forget_instance(database.db, instance_id)
        if pool is not None:
            await pool.close()
        await backend.close()
        await database.close()


async def start_backend(backend: Any) -> None:
    """Create the container or directory when missing; an outage here is not fatal."""
    start = getattr(backend, "start", None)
    if start is None:
        return
    try:
        await start()
    except BackendUnavailable:
        log.warning("storage unavailable at start-up; requests get 503 until it answers")


async def drain(server: HTTPServer, ctx: AppContext, grace_seconds: float = 10.0) -> None:
    """Stop accepting, let requests in flight finish (bounded), then close what remains."""
    server.stop()
    deadline = asyncio.get_running_loop().time() + grace_seconds
    while ctx.active_requests and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    await server.close_all_connections()


def listen(settings: Settings, ctx: AppContext) -> tuple[HTTPServer, int]:
    # body_timeout: a stalled upload fails (and is cleaned up) instead of holding a temp blob.
    server = HTTPServer(make_app(ctx), max_body_size=JSON_BODY_LIMIT, xheaders=False,
                        body_timeout=60, idle_connection_timeout=120)
    sockets = bind_sockets(settings.port, settings.host)
    server.add_sockets(sockets)
    port = int(sockets[0].getsockname()[1])
    ctx.viewer_url = settings.viewer_url(port)
    return server, port


def start_housekeeping(db: Any, store: BlobStore, instance_id: str) -> PeriodicCallback:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        ticks += 1
        try:
            await recovery.heartbeat(db, instance_id)
            if ticks % recovery.RECOVERY_EVERY_HEARTBEATS == 0:
                await recovery.recover(db, store)
        except Exception:  # the database may be down; the next tick retries
            log.warning("housekeeping skipped: database unavailable")

    callback = PeriodicCallback(tick, recovery.HEARTBEAT_SECONDS * 1000)
    callback.start()
    return callback


async def wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("vaultd stopping")


def main(argv: list[str] | None = None) -> None:
    try:
        settings = build_settings(parse_args(argv))
        setup_logging(settings.log_level)
        asyncio.run(serve(settings))
    except (ConfigError, EmbeddedDbError, SandboxUnavailable) as exc:
        print(f"vaultd: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:  # typically the port is taken
        print(f"vaultd: cannot start: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()

"""vaultd's entry point: a short list of named steps, and teardown in `finally`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pymongo.errors import PyMongoError
from tornado.httpserver import HTTPServer
from tornado.ioloop import PeriodicCallback

from backends import BUILT_IN
from backends.base import BackendUnavailable, BlobBackend
from render.pool.blend_kernel import blend_implementation
from render.pool.fair_queue import FairQueueLimits
from render.pool.render_pool import RenderPool
from render.pool.sandbox_report import SandboxUnavailable
from vaultd import collector, data_dir
from vaultd.announcements import announce_console, announce_new_key, no_account_yet
from vaultd.config import OPTION_HELP, ConfigError, Settings, settings_from
from vaultd.db import Db
from vaultd.embedded_db import EmbeddedDbError
from vaultd.logs import setup_logging
from vaultd.metrics import Metrics
from vaultd.metrics.database import watch_database
from vaultd.metrics.listener import start_metrics
from vaultd.metrics.render_pool import PoolMetrics
from vaultd.runtime import KeyringSource, make_backend, open_database
from vaultd.services.analytics import engagement
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import background
from vaultd.services.common.fair_share import FairShare
from vaultd.services.common.older_log_numbering import LogNumbering
from vaultd.services.files.blobs import BlobStore
from vaultd.services.gates import registry
from vaultd.services.gates.code_key import code_key
from vaultd.services.gates.email_codes import EmailCodes
from vaultd.services.gates.mail import Mailer
from vaultd.services.gates.registry import GateRegistryError
from vaultd.services.members import oidc_pending
from vaultd.services.members.oidc import RelyingParty
from vaultd.services.members.oidc_config import OidcClient, oidc_client
from vaultd.services.members.sign_in_codes import SignInCodes
from vaultd.services.notifications import notifier
from vaultd.services.notifications.notifier import Notifier
from vaultd.services.pages import mark_key
from vaultd.services.pages.fair_share_hook import FairShareHook
from vaultd.services.pages.page_path import PagePath
from vaultd.services.rooms.reads import RoomPages
from vaultd.services.storage import recovery
from vaultd.services.tracing.page_prints import PagePrints
from vaultd.services.webhooks.webhook_delivery import Deliverer, DeliveryConfig
from vaultd.shutdown import stop_gracefully
from vaultd.startup import DataDirLock, StartupError, bind, prepare_data_dir
from vaultd.version import VERSION
from vaultd.web.app import make_app
from vaultd.web.context import AppContext
from vaultd.web.listener import effective_max_connections, raise_nofile_limit
from vaultd.web.server import ServerLimits, make_server

log = logging.getLogger("vaultd")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="vaultd", description="vaultd: the encrypted document vault server.",
        epilog="Administer it with vault-admin. Every setting: config/vaultd.toml; "
               "operations: docs/operations.md.")
    parser.add_argument("--host",
                        help="address to listen on (default 127.0.0.1; env VAULTD_HOST)")
    parser.add_argument("--port",
                        help="TCP port (default 8080, 0 picks a free one; env VAULTD_PORT)")
    parser.add_argument("--data-dir", help=OPTION_HELP["data_dir"])
    parser.add_argument("--config", help=OPTION_HELP["config"])
    parser.add_argument("--version", action="version", version=f"vaultd {VERSION}")
    return parser.parse_args(argv)


def build_settings(args: argparse.Namespace) -> Settings:
    flags = {"host": args.host, "port": args.port, "data_dir": args.data_dir}
    return settings_from(args.config, flags)


def make_pool(settings: Settings, metrics: Metrics | None = None) -> RenderPool:
    return RenderPool(
        workers=settings.render_workers,
        queue_size=settings.render_queue_size,
        timeout_seconds=settings.render_timeout_seconds,
        max_tasks_per_worker=settings.render_max_tasks_per_worker,
        memory_limit_bytes=settings.render_memory_limit_mb << 20,
        sandbox=settings.render_sandbox,
        fairness=FairQueueLimits(
            max_per_link=settings.render_max_per_link,
            max_per_ip=settings.render_max_per_ip,
            max_waiting_per_account=(settings.render_max_waiting_per_account
                                     or max(1, settings.render_queue_size // 2)),
            timeout_penalty=settings.render_timeout_penalty,
            max_running_per_account=(settings.render_max_running_per_account
                                     or max(1, settings.render_workers - 1)),
        ),
        observer=PoolMetrics(metrics) if metrics is not None else None,
    )


async def serve(settings: Settings,
                until: Callable[[], Awaitable[None]] | None = None,
                config_path: str | None = None) -> None:
    """Serve until `until` returns (by default SIGINT or SIGTERM), then stop gracefully. The
    in-process test harness (tests/inprocess.py) passes its own stop, so it builds the app
    exactly as here. `config_path`: the file `--config` named, for the console's line."""
    # Checked before anything starts: a half-set auth.oidc, the directory, that it is ours
    # alone, the port.
    oidc = oidc_client(settings)
    load_gates(settings)
    require_copy_sdk(settings)
    lock = DataDirLock(prepare_data_dir(settings), "vaultd")
    data_dir.secure(settings.data_path)  # 0700, files 0600, umask 077 for all that follows
    if not settings.mongodb_uri:  # the embedded database is for one process only
        lock.acquire()
    try:
        sockets = bind(settings)
        # The backend's options are checked before the key is read, so that a refused first
        # start leaves no master key behind that nothing was ever encrypted with.
        backend = make_backend(settings)
        keyrings = KeyringSource(settings)
        announce_new_key(settings, keyrings)
        await run_service(settings, sockets, keyrings, backend, oidc=oidc,
                          until=until or wait_for_signal, config_path=config_path)
    finally:
        lock.release()


def require_copy_sdk(settings: Settings) -> None:
    """The checkpoints' Object Lock copy (`audit.copy_bucket`) writes through S3's SDK, an
    optional install (the `s3` extra): imported only where the copy is set, and refused before
    anything starts when it is set without it."""
    if not settings.audit_copy_bucket:
        return
    try:
        import aiobotocore  # noqa: F401
    except ImportError:
        raise ConfigError("config: audit.copy_bucket needs the S3 client: "
                          f"{BUILT_IN['s3'].install}") from None


def load_gates(settings: Settings) -> None:
    """The operator's own gate types (`gates.extra_modules`), registered before anything is
    served: routes and policies are read from the registry."""
    try:
        registry.load_modules(settings.gates_extra_modules)
    except GateRegistryError as error:
        raise ConfigError(str(error)) from None


@dataclass
class BackgroundWork:
    """What every process runs beside its requests: housekeeping, webhook delivery, the audit
    log's sequencer and members' mails; started once the process listens, stopped before it
    forgets its instance."""

    heartbeat: PeriodicCallback | None = None
    deliverer: Deliverer | None = None
    sequencer: Sequencer | None = None
    mailer: Notifier | None = None

    async def start(self, settings: Settings, db: Db, store: BlobStore, keyrings: KeyringSource,
                    instance_id: str, metrics: Metrics) -> None:
        self.heartbeat = start_housekeeping(db, store, instance_id)
        self.deliverer = start_webhook_delivery(settings, db, keyrings, metrics.webhook_attempted)
        self.sequencer = start_audit_sequencer(settings, db, keyrings, instance_id)
        self.mailer = await start_notifications(settings, db)

    async def stop(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        # Revoke-alls' and deletions' background steps: their jobs stay recorded, and recovery
        # (another process's, or the next start's) resumes them once this instance is forgotten.
        background.stop()
        for worker in (self.deliverer, self.sequencer, self.mailer):
            if worker is not None:
                await worker.stop()


async def run_service(settings: Settings, sockets: list[socket.socket],
                      keyrings: KeyringSource, backend: BlobBackend, *,
                      oidc: OidcClient | None = None,
                      until: Callable[[], Awaitable[None]] | None = None,
                      config_path: str | None = None) -> None:
    metrics = Metrics(settings.metrics_per_account)
    if settings.metrics_port:
        watch_database(metrics)  # before the client is made: it reports its commands
    database = await open_database(settings)
    database.supervise()  # a dead embedded database is restarted; requests get 503 meanwhile
    pool: RenderPool | None = None
    instance_id = recovery.new_instance_id()
    background = BackgroundWork()
    try:
        await start_backend(backend)
        pool = make_pool(settings, metrics)
        await pool.wait_ready()  # "required" and a sandbox layer missing: refuse to start
        store = BlobStore(backend, keyrings.current(), keyrings.current)
        await recovery.heartbeat(database.db, instance_id)
        await recovery.recover(database.db, store, instance_id)
        mark = await mark_key.mark_cipher(database.db, keyrings.current())
        fair_share = FairShare(settings.server_fair_share, on_hold=metrics.fair_share_hold)
        analytics = engagement.EngagementHook(database.db, settings.analytics_flush_seconds)
        pages = PagePath(database.db, store, pool, settings, mark, RoomPages(database.db),
                         hooks=[analytics, FairShareHook(fair_share)])
        if settings.trace_placement_mark:  # each page's print, which narrows a placement trace
            pages.hooks.append(PagePrints(database.db, pool, mark))
        ctx = AppContext(settings, database.db, store, pool, pages, instance_id, "",
                         codes=await email_codes(settings, database.db, keyrings),
                         metrics=metrics, fair_share=fair_share,
                         oidc=await relying_party(database.db, oidc))
        ctx.sign_in_codes = SignInCodes(database.db, settings, await code_key(
            database.db, keyrings.current()), ctx.pending_work.spawn)
        no_account = await no_account_yet(database.db)
        server, port = listen(settings, ctx, sockets)
        start_metrics(settings, metrics, database.db, pool)  # its own port, when set
        await background.start(settings, database.db, store, keyrings, instance_id, metrics)
        log.info("vaultd %s listening on http://%s:%d (viewer %s; watermark blend: %s)",
                 VERSION, settings.host, port, settings.viewer_url(port), blend_implementation())
        print(f"vaultd listening on http://{settings.host}:{port}", flush=True)
        announce_console(settings, port, no_account, config_path)
        await (until or wait_for_signal)()
        assert background.deliverer is not None  # started above
        await stop_gracefully(server, ctx, pages, background.deliverer,
                              settings.server_shutdown_grace_seconds)
    finally:
        await background.stop()
        try:  # with the database down, the instance is settled by the next start's recovery
            await recovery.forget_instance(database.db, instance_id)
        except PyMongoError:
            log.warning("stopping without deregistering: database unavailable")
        if pool is not None:
            await pool.close()
        await backend.close()
        await database.close()
        # Last: what the background work said while requests drained comes before it, so an
        # operator (and a supervisor's log) can tell a finished stop from one cut short.
        log.info("vaultd stopped")


async def email_codes(settings: Settings, db: Db, keyrings: KeyringSource) -> EmailCodes | None:
    """The email codes of verified links, when SMTP is configured (settings `smtp.*`)."""
    if not settings.smtp_host:
        return None
    return EmailCodes(db, await code_key(db, keyrings.current()), Mailer(settings))


async def relying_party(db: Db, client: OidcClient | None) -> RelyingParty | None:
    """Sign-in with the identity provider, when `auth.oidc.*` is set. The provider is first
    asked at the first sign-in: one that is down at start-up stops nothing else."""
    if client is None:
        return None
    await oidc_pending.ensure_indexes(db)
    return RelyingParty(db, client)


async def start_backend(backend: BlobBackend) -> None:
    """Create the container or directory when missing; an outage here is not fatal."""
    try:
        await backend.start()
    except BackendUnavailable:
        log.warning("storage unavailable at start-up; requests get 503 until it answers")


def listen(
    settings: Settings, ctx: AppContext, sockets: list[socket.socket]
) -> tuple[HTTPServer, int]:
    # A stalled body is cut after its idle timeout (and a stalled upload cleaned up); the
    # connection cap stays below the open-file limit, raised to its hard value first.
    limits = ServerLimits(
        max_connections=effective_max_connections(
            settings.server_max_connections, raise_nofile_limit()
        ),
        header_timeout_seconds=settings.server_header_timeout_seconds,
        body_idle_timeout_seconds=settings.server_body_idle_timeout_seconds,
    )
    server = make_server(make_app(ctx), limits)
    port = int(sockets[0].getsockname()[1])
    server.add_sockets(sockets)  # wraps them (the originals are detached)
    ctx.viewer_url = settings.viewer_url(port)
    return server, port


def start_housekeeping(db: Db, store: BlobStore, instance_id: str) -> PeriodicCallback:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        ticks += 1
        try:
            await recovery.heartbeat(db, instance_id)
            if ticks % recovery.RECOVERY_EVERY_HEARTBEATS == 0:
                await recovery.recover(db, store, instance_id)
        except Exception:  # the database may be down; the next tick retries
            log.warning("housekeeping skipped: database unavailable")

    callback = PeriodicCallback(tick, recovery.HEARTBEAT_SECONDS * 1000)
    callback.start()
    return callback


def start_webhook_delivery(settings: Settings, db: Db, keyrings: KeyringSource,
                           on_attempt: Callable[[bool], None]) -> Deliverer:
    config = DeliveryConfig(settings.webhooks_retry_schedule,
                            settings.webhooks_allow_private_networks,
                            settings.webhooks_lease_seconds, settings.webhooks_poll_seconds,
                            settings.webhooks_hold_seconds, settings.webhooks_keep_days * 86400)
    deliverer = Deliverer(db, keyrings.current, config, on_attempt)
    deliverer.start()
    return deliverer


def start_audit_sequencer(settings: Settings, db: Db, keyrings: KeyringSource,
                          instance_id: str) -> Sequencer | None:
    """The audit log's sequencer: runs in every process, sequences in the one holding the lease
    (none where `audit.enabled` is off)."""
    if not settings.audit_enabled:
        return None
    config = SequencerConfig(settings.audit_merge_delay_seconds,
                             settings.audit_late_arrival_seconds, settings.audit_lease_seconds,
                             settings.audit_checkpoint_every_entries,
                             settings.audit_checkpoint_every_seconds, settings.audit_origin,
                             bool(settings.audit_copy_bucket))
    sequencer = Sequencer(db, lambda: current_signer(db, keyrings.current(), settings.audit_origin),
                          config, instance_id)
    # The access log's numbers come behind the round's fence (services.common.log_numbering),
    # then the older entries' (older_log_numbering).
    sequencer.numbering = LogNumbering(db)
    if settings.audit_copy_bucket:
        from vaultd.services.audit.lock_copy import CopyConfig, LockCopier  # S3's SDK: see above
        sequencer.copier = LockCopier(db, CopyConfig(
            settings.audit_copy_bucket, settings.audit_copy_prefix, settings.audit_copy_lock_mode,
            settings.audit_copy_retention_days, settings.storage_s3_region,
            settings.storage_s3_endpoint_url, settings.storage_s3_addressing_style), instance_id)
    sequencer.start()
    return sequencer


async def start_notifications(settings: Settings, db: Db) -> Notifier | None:
    """Members' notification mails, when SMTP is set (`smtp.*`); every process sends."""
    if not settings.smtp_host:
        return None
    await notifier.ensure_indexes(db)
    mailer = Notifier(db, settings)
    mailer.start()
    return mailer


async def wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("vaultd stopping")


def main(argv: list[str] | None = None) -> None:
    try:
        args = parse_args(argv)
        settings = build_settings(args)
        setup_logging(settings.log_level)
        collector.settle()  # the imports live as long as the process: out of the collector's way
        asyncio.run(serve(settings, config_path=args.config))
    except (ConfigError, EmbeddedDbError, StartupError, SandboxUnavailable) as exc:
        print(f"vaultd: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:  # not foreseen above: still say which file or address
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"vaultd: cannot start: {exc.strerror or exc}{where}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()

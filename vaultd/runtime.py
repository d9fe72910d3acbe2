"""Opening what vaultd and vault-admin share: the database, the keyring and the blob backend."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pymongo
from pymongo.errors import ConfigurationError, ConnectionFailure, OperationFailure

from backends import BackendConfigError, create_backend
from backends.base import BlobBackend
from vaultd import embedded_db
from vaultd.config import ConfigError, Settings
from vaultd.crypto.keyring import KeyringError, MasterKeyring
from vaultd.db import SELECTION_TIMEOUT_MS, Db, connect, ping, public_address
from vaultd.db_indexes import ensure_indexes
from vaultd.db_supervisor import DbSupervisor
from vaultd.startup import StartupError

log = logging.getLogger("vaultd")


def make_backend(settings: Settings) -> BlobBackend:
    """The configured backend; bad options or a missing optional SDK are a one-line ConfigError."""
    try:
        return create_backend(settings.storage_backend, settings.backend_options())
    except BackendConfigError as exc:
        raise ConfigError(str(exc)) from None


def load_keyring(settings: Settings) -> MasterKeyring:
    try:
        if settings.master_key_value:
            return MasterKeyring.parse(settings.master_key_value, "VAULTD_MASTER_KEY")
        ring = MasterKeyring.load_or_create(settings.master_key_path)
    except KeyringError as exc:
        raise ConfigError(str(exc)) from None
    return ring


class KeyringSource:
    """The master keyring, read again whenever its file changes (one stat per use)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._ring = load_keyring(settings)  # creates the key file on first start
        self.created = bool(getattr(self._ring, "created", False))
        self._stamp = self._file_stamp()

    def _file_stamp(self) -> int | None:
        if self._settings.master_key_value:
            return None
        try:
            return self._settings.master_key_path.stat().st_mtime_ns
        except OSError:
            return None

    def current(self) -> MasterKeyring:
        stamp = self._file_stamp()
        # No stamp: an inline key, or the file is being replaced; keep what we have.
        if stamp is not None and stamp != self._stamp:
            self._ring, self._stamp = load_keyring(self._settings), stamp
        return self._ring


@dataclass
class Database:
    db: Db
    server: embedded_db.EmbeddedServer | None
    supervisor: DbSupervisor | None = None

    def supervise(self) -> None:
        """Restart the embedded database whenever it dies (vaultd only, not vault-admin)."""
        if self.server is not None and self.supervisor is None:
            self.supervisor = DbSupervisor(self.server, self.db)
            self.supervisor.start()

    async def close(self) -> None:
        if self.supervisor is not None:  # first, or it would restart what is stopped below
            await self.supervisor.stop()
            self.server = self.supervisor.server
        await self.db.close()
        if self.server is not None:
            self.server.stop()


async def open_database(settings: Settings, reuse_running: bool = False) -> Database:
    """Connect to the configured MongoDB, or to the embedded server (started if need be)."""
    server = None
    uri: str | None = settings.mongodb_uri
    if not uri:
        storage = settings.data_path / "db"
        uri = embedded_db.running_address(storage) if reuse_running else None
        if uri is None:
            server = embedded_db.start(storage, record_address=not reuse_running,
                                       start_seconds=settings.mongodb_embedded_start_seconds)
            uri = server.uri
    db = _connect(settings, uri)
    try:
        await _first_contact(settings, db, uri)
    except BaseException:
        await db.close()
        if server is not None:
            server.stop()
        raise
    return Database(db, server)


SETTING = "mongodb.uri / VAULTD_MONGODB_URI"
INDEX_BUILD_SECONDS = 600.0


def _connect(settings: Settings, uri: str) -> Db:
    try:
        return connect(uri, settings.mongodb_database)
    except ConfigurationError as exc:  # pymongo's text may quote the URI: name only the kind
        raise ConfigError(f"{SETTING}: not a usable MongoDB URI ({type(exc).__name__}) for "
                          f"{public_address(uri)}") from None


async def _first_contact(settings: Settings, db: Db, uri: str) -> None:
    """Ping and create the indexes; an unreachable or refusing database is one line naming the
    setting and the address (never the password), not a traceback."""
    where = (f"the database at {public_address(uri)} ({SETTING})" if settings.mongodb_uri
             else f"the embedded database in {settings.data_path / 'db'}")
    try:
        await ping(db)
        # A new index on a large collection may build for longer than the socket timeout.
        with pymongo.timeout(INDEX_BUILD_SECONDS):
            await ensure_indexes(db)
    except ConnectionFailure:
        raise StartupError(f"cannot reach {where}: no answer within "
                           f"{SELECTION_TIMEOUT_MS / 1000:g} s; is it running?") from None
    except OperationFailure as exc:
        raise StartupError(f"{where} refused vaultd: "
                           f"{(exc.details or {}).get('codeName') or exc.code}") from None


@asynccontextmanager
async def database(settings: Settings, reuse_running: bool = False) -> AsyncIterator[Db]:
    handle = await open_database(settings, reuse_running)
    try:
        yield handle.db
    finally:
        await handle.close()

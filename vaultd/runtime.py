"""Opening what vaultd and vault-admin share: the database, the keyring and the blob backend."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from collections.abc import AsyncIterator
from dataclasses import dataclass

from backends.base import BlobBackend
from vaultd import embedded_db
from vaultd.config import ConfigError, Settings
from vaultd.crypto.keyring import KeyringError, MasterKeyring
from vaultd.db import Db, connect, ensure_indexes, ping

log = logging.getLogger("vaultd")


def make_backend(settings: Settings) -> BlobBackend:
    if settings.storage_backend == "local":
        from backends.local import LocalBackend

        return LocalBackend(settings.local_blob_dir)
    from backends.azure import AzureBackend  # imported lazily: an optional dependency

    return AzureBackend.from_settings(settings)


def load_keyring(settings: Settings) -> MasterKeyring:
    try:
        if settings.master_key_value:
            return MasterKeyring.parse(settings.master_key_value, "VAULTD_MASTER_KEY")
        ring = MasterKeyring.load_or_create(settings.master_key_path)
    except KeyringError as exc:
        raise ConfigError(str(exc)) from None
    return ring


@dataclass
class Database:
    db: Db
    server: embedded_db.EmbeddedServer | None

    async def close(self) -> None:
        await self.db.close()
        if self.server is not None:
            self.server.stop()


async def open_database(settings: Settings, reuse_running: bool = False) -> Database:
    """Connect to the configured MongoDB, or to the embedded server (started if need be)."""
    server = None
    uri = settings.mongodb_uri
    if not uri:
        storage = settings.data_path / "db"
        uri = embedded_db.running_address(storage) if reuse_running else None
        if uri is None:
            server = embedded_db.start(storage, record_address=not reuse_running)
            uri = server.uri
    db = connect(uri, settings.mongodb_database)
    try:
        await ping(db)
        await ensure_indexes(db)
    except BaseException:
        await db.close()
        if server is not None:
            server.stop()
        raise
    return Database(db, server)


@asynccontextmanager
async def database(settings: Settings, reuse_running: bool = False) -> AsyncIterator[Db]:
    handle = await open_database(settings, reuse_running)
    try:
        yield handle.db
    finally:
        await handle.close()

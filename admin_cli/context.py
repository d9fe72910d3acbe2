"""Shared CLI state: settings from --data-dir/--config/env (as vaultd reads them), the check
that the data directory holds a vault, and one error boundary."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from pymongo.errors import PyMongoError

from admin_cli.output import fail
from vaultd import embedded_db
from vaultd.config import ConfigError, Settings, settings_from
from vaultd.db import Db, describe_failure
from vaultd.embedded_db import EmbeddedDbError
from vaultd.errors import VaultError
from vaultd.runtime import database
from vaultd.startup import (
    EMBEDDED_DB_DIR,
    DataDirLock,
    StartupError,
    holder_of,
    holds_vault,
)

T = TypeVar("T")


@dataclass
class CliState:
    data_dir: str | None = None
    config: str | None = None
    json: bool = False

    def settings(self) -> Settings:
        return settings_from(self.config, {"data_dir": self.data_dir})


STATE = CliState()


def vault_settings() -> Settings:
    """The settings, once the data directory is known to hold a vault: a typo in --data-dir
    must not quietly create a second, empty one."""
    settings = STATE.settings()
    if not holds_vault(settings):
        raise StartupError(
            f"no vault in {settings.data_path.resolve()} (set --data-dir, VAULTD_DATA_DIR or "
            "data_dir in --config; vault-admin init creates a new one)")
    return settings


def run(action: Callable[[Settings, Db], Awaitable[T]]) -> T:
    """Open the database (the running vaultd's, or an embedded one for this command) and run."""
    return guarded(lambda: asyncio.run(_with_database(vault_settings(), action)))


async def _with_database(settings: Settings, action: Callable[[Settings, Db], Awaitable[T]]) -> T:
    lock = _lock_unless_vaultd_runs(settings)
    try:
        async with database(settings, reuse_running=True) as db:
            return await action(settings, db)
    finally:
        if lock is not None:
            lock.release()


def _lock_unless_vaultd_runs(settings: Settings) -> DataDirLock | None:
    """When no vaultd serves this directory, this command starts the embedded database itself
    and holds the directory meanwhile; a vaultd still starting up is reported, not raced."""
    if settings.mongodb_uri or embedded_db.running_address(
            settings.data_path / EMBEDDED_DB_DIR) is not None:
        return None
    holder = holder_of(settings.data_path)
    if holder is not None:
        raise StartupError(f"data directory {settings.data_path} is in use by {holder}, whose "
                           "database does not answer; retry once it is up")
    return DataDirLock(settings.data_path, "vault-admin").acquire()


def guarded(call: Callable[[], T]) -> T:
    """The error boundary: one line on stderr and exit 1, never a traceback."""
    try:
        return call()
    except VaultError as exc:
        fail(exc.message)
    except (ConfigError, EmbeddedDbError, StartupError, ValueError) as exc:
        fail(str(exc))
    except PyMongoError as exc:
        fail(describe_failure(exc))
    raise AssertionError("unreachable")


def want_json(flag: bool) -> bool:
    return flag or STATE.json


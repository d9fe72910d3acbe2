"""Shared CLI state: settings from --data-dir/--config/env, and one error boundary."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from pymongo.errors import PyMongoError

from admin_cli.output import fail
from vaultd.config import ConfigError, Settings, load_settings, read_config_file
from vaultd.db import Db
from vaultd.embedded_db import EmbeddedDbError
from vaultd.errors import VaultError
from vaultd.runtime import database

T = TypeVar("T")


@dataclass
class CliState:
    data_dir: str | None = None
    config: str | None = None
    json: bool = False

    def settings(self) -> Settings:
        file_values = read_config_file(self.config) if self.config else {}
        return load_settings(file_values, flags={"data_dir": self.data_dir})


STATE = CliState()


def run(action: Callable[[Settings, Db], Awaitable[T]]) -> T:
    """Open the database (the running vaultd's, or an embedded one for this command) and run."""

    async def main() -> T:
        settings = STATE.settings()
        async with database(settings, reuse_running=True) as db:
            return await action(settings, db)

    return guarded(lambda: asyncio.run(main()))


def guarded(call: Callable[[], T]) -> T:
    """The error boundary: one line on stderr and exit 1, never a traceback."""
    try:
        return call()
    except VaultError as exc:
        fail(exc.message)
    except (ConfigError, EmbeddedDbError, ValueError) as exc:
        fail(str(exc))
    except PyMongoError as exc:
        fail(f"database error: {type(exc).__name__}")
    raise AssertionError("unreachable")


def want_json(flag: bool) -> bool:
    return flag or STATE.json


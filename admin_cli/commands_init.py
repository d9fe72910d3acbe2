"""vault-admin init: the one command that may create a vault."""

from __future__ import annotations

import asyncio
from typing import Any

from admin_cli.context import STATE, guarded, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.runtime import KeyringSource, database
from vaultd.startup import DataDirLock, StartupError, holds_vault, prepare_data_dir


def init(as_json: JsonFlag = False) -> None:
    """Create a new vault in the data directory: its database and its master key."""
    result = guarded(lambda: asyncio.run(_init()))
    text = f"created a vault in {result['dataDir']}"
    if result["masterKeyCreated"]:
        text += (f"\nmaster key: {result['masterKeyFile']}\nBack it up now, apart from the "
                 "database: losing it loses every file.")
    emit(result, want_json(as_json), text)


async def _init() -> dict[str, Any]:
    settings = STATE.settings()
    if holds_vault(settings) and not settings.mongodb_uri:
        raise StartupError(f"{settings.data_path.resolve()} already holds a vault")
    lock = DataDirLock(prepare_data_dir(settings), "vault-admin").acquire()
    try:
        keyrings = KeyringSource(settings)  # generates the key file unless one is configured
        async with database(settings):  # creates the database and its indexes
            pass
    finally:
        lock.release()
    key_file = None if settings.master_key_value else str(settings.master_key_path.resolve())
    return {"dataDir": str(settings.data_path.resolve()), "masterKeyFile": key_file,
            "masterKeyCreated": keyrings.created}

"""vault-admin rooms ...: an account's data rooms."""

from __future__ import annotations

from typing import Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.rooms import records

app = typer.Typer(no_args_is_help=True, help="List an account's data rooms.")


@app.command("list")
def list_(account_id: str, as_json: JsonFlag = False) -> None:
    """List an account's rooms, newest first, with their items and live links."""
    async def action(_: Settings, db: Db) -> list[dict[str, Any]]:
        return await records.summaries(db, account_id)

    emit(run(action), want_json(as_json))

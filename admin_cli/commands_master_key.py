"""vault-admin master-key rotate."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.rewrap import rotate_master_key

app = typer.Typer(no_args_is_help=True, help="Master key management.")


@app.command("rotate")
def rotate(
    drop_old: Annotated[bool, typer.Option(
        "--drop-old", help="Remove the old keys from the keyring once every data key is re-wrapped."
    )] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Add a new master key and re-wrap every data key under it (blobs are not touched)."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        return await rotate_master_key(settings, db, drop_old)

    result = run(action)
    emit(result, want_json(as_json),
         f"new master key {result['currentKeyId']}; re-wrapped {result['rewrapped']} data keys")

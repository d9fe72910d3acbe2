"""vault-admin master-key rotate | show-path."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import guarded, run, vault_settings, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.audit import keys as audit_keys
from vaultd.services.storage.rewrap import rotate_master_key

app = typer.Typer(no_args_is_help=True, help="Master key management.")
BACKUP = "back it up apart from the database and the blobs: losing it loses every file"


@app.command("rotate")
def rotate(
    drop_old: Annotated[bool, typer.Option(
        "--drop-old", help="Remove the old keys from the keyring once every data key is re-wrapped."
    )] = False,
    as_json: JsonFlag = False,
) -> None:
    """Add a new master key and re-wrap every data key and webhook secret under it (blobs are
    not touched)."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        return await rotate_master_key(settings, db, drop_old, also=[audit_keys.rewrap])

    result = run(action)
    text = (f"new master key {result['currentKeyId']}; re-wrapped {result['rewrapped']} data "
            "keys and webhook secrets")
    if result["droppedKeyIds"]:
        # A backup holds data keys wrapped under the keys of its day: only the old key file
        # opens one made before this rotation.
        text += (f"\ndropped the old master keys {', '.join(result['droppedKeyIds'])} from the "
                 "key file: backups made before now need a copy of the old key file to restore")
    emit(result, want_json(as_json), text)


@app.command("show-path")
def show_path(as_json: JsonFlag = False) -> None:
    """Say where the master key is (the file to back up), without reading it."""
    settings = guarded(vault_settings)
    result = _where(settings)
    if result["source"] == "environment":
        text = "master key: from VAULTD_MASTER_KEY (the environment), no file"
    else:
        missing = "" if result["exists"] else " (missing: vaultd creates it on first start)"
        text = f"master key: {result['path']}{missing}\n{BACKUP[0].upper()}{BACKUP[1:]}."
    emit(result, want_json(as_json), text)


def _where(settings: Settings) -> dict[str, Any]:
    if settings.master_key_value:
        return {"source": "environment", "path": None, "exists": None}
    path = settings.master_key_path.resolve()
    return {"source": "file", "path": str(path), "exists": path.is_file()}

"""vault-admin keys ..."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import emit, human
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.accounts import api_keys

app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API keys.")
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@app.command("create")
def create(account_id: str, as_json: JsonFlag = False) -> None:
    """Create an API key; it is printed once and cannot be shown again."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        info, key = await api_keys.create_key(db, account_id)
        return {**info.to_json(), "key": key}

    result = run(action)
    emit(result, want_json(as_json),
         f"{human(result)}\nStore the key now: it is not shown again.")


@app.command("list")
def list_(account_id: str, as_json: JsonFlag = False) -> None:
    """List an account's keys (never the secrets)."""
    async def action(_: Settings, db: Db) -> list[dict[str, Any]]:
        return [k.to_json() for k in await api_keys.list_keys(db, account_id)]

    emit(run(action), want_json(as_json))


@app.command("revoke")
def revoke(key_id: str, as_json: JsonFlag = False) -> None:
    """Revoke a key; requests with it get 401 from then on."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        return (await api_keys.revoke_key(db, key_id)).to_json()

    emit(run(action), want_json(as_json))

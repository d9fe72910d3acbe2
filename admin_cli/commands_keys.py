"""vault-admin keys ..."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit, human
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.accounts import api_keys
from vaultd.services.accounts.accounts import get_account
from vaultd.services.members import activity
from vaultd.services.members import keys as member_keys
from vaultd.services.members.actor import operator
from vaultd.services.members.members import parse_name, parse_role

app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API keys.")


@app.command("create")
def create(
    account_id: str,
    name: Annotated[str, typer.Option("--name", help="What the key is for.")] = "",
    role: Annotated[str, typer.Option("--role", help="admin, member or auditor.")] = "admin",
    as_json: JsonFlag = False,
) -> None:
    """Create an API key; it is printed once and cannot be shown again."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        await get_account(db, account_id)
        info, key = await member_keys.create(db, operator(account_id), name=parse_name(name),
                                             role=parse_role(role))
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
        info, revoked_now = await api_keys.revoke_key_once(db, key_id)
        if revoked_now:
            await activity.record(db, operator(info.account_id), "key.revoked", target=info.id,
                                  detail={"name": info.name})
        return info.to_json()

    emit(run(action), want_json(as_json))

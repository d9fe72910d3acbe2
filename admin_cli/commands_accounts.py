"""vault-admin accounts ..."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.members import activity
from vaultd.services.members.actor import operator

app = typer.Typer(no_args_is_help=True, help="Create and manage accounts.")


def _summary(account: accounts.Account) -> dict[str, Any]:
    return {"id": account.id, "name": account.name, "plan": account.plan.id,
            "branding": account.branding, "brand": account.brand}


@app.command("create")
def create(
    name: str,
    plan: Annotated[str, typer.Option(help="free, pro or business.")] = "free",
    as_json: JsonFlag = False,
) -> None:
    """Create an account."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        return _summary(await accounts.create_account(db, name, plan))

    emit(run(action), want_json(as_json))


@app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List accounts."""
    async def action(_: Settings, db: Db) -> list[dict[str, Any]]:
        return [_summary(a) for a in await accounts.list_accounts(db)]

    emit(run(action), want_json(as_json))


@app.command("show")
def show(account_id: str, as_json: JsonFlag = False) -> None:
    """Show an account with its plan and live usage."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        account = await accounts.get_account(db, account_id)
        return {**await accounts.account_json(db, account), "branding": account.branding,
                "brand": account.brand}

    emit(run(action), want_json(as_json))


@app.command("set-plan")
def set_plan(account_id: str, plan: str, as_json: JsonFlag = False) -> None:
    """Change an account's plan."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        return _summary(await accounts.set_plan(db, account_id, plan))

    emit(run(action), want_json(as_json))


@app.command("set-branding")
def set_branding(account_id: str, text: str, as_json: JsonFlag = False) -> None:
    """Set the watermark branding (used on Pro and Business plans; empty text clears it)."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        summary = _summary(await accounts.set_branding(db, account_id, text))
        await activity.record(db, operator(account_id), "branding.changed",
                              detail={"branding": text})
        return summary

    emit(run(action), want_json(as_json))

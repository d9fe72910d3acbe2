"""vault-admin members ...: an account's people, managed by the operator (who adds the first
admin). Every change is in the account's activity log, by the operator."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.accounts.accounts import get_account
from vaultd.services.members import members
from vaultd.services.members.actor import operator

members_app = typer.Typer(no_args_is_help=True, help="Add, list, change and remove members.")


@members_app.command("add")
def add(
    account_id: str,
    email: str,
    role: Annotated[str, typer.Option("--role", help="admin, member or auditor.")] = "member",
    name: Annotated[str, typer.Option("--name", help="The member's name.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Invite EMAIL to the account with ROLE (invited until their first sign-in)."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        doc = await members.add_member(db, operator(account_id), email,
                                       role=members.parse_role(role),
                                       name=members.parse_name(name))
        return members.member_json(doc)

    emit(run(action), want_json(as_json))


@members_app.command("list")
def list_(account_id: str, as_json: JsonFlag = False) -> None:
    """List the account's members (not the removed ones)."""
    async def action(_: Settings, db: Db) -> list[dict[str, Any]]:
        await get_account(db, account_id)
        return [members.member_json(doc)
                for doc in await members.list_members(db, account_id)]

    emit(run(action), want_json(as_json))


@members_app.command("set-role")
def set_role(account_id: str, email: str, role: str, as_json: JsonFlag = False) -> None:
    """Change a member's role (admin, member or auditor); their sessions end."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        doc = await members.member_by_email(db, account_id, email)
        changed = await members.set_role(db, operator(account_id), doc["_id"],
                                         members.parse_role(role))
        return members.member_json(changed)

    emit(run(action), want_json(as_json))


@members_app.command("remove")
def remove(account_id: str, email: str, as_json: JsonFlag = False) -> None:
    """Remove a member; their sessions end, the keys they made keep working until revoked."""
    async def action(_: Settings, db: Db) -> dict[str, Any]:
        doc = await members.member_by_email(db, account_id, email)
        return members.member_json(await members.remove_member(db, operator(account_id),
                                                               doc["_id"]))

    emit(run(action), want_json(as_json))

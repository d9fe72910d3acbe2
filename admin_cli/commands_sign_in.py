"""vault-admin members sign-in-link: a one-time sign-in URL for a member (the first admin, or
any member where no SMTP server is set for mailed codes); `members add-first-admin`: the
quick start's one command from a new vault to a signed-in admin."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import Conflict
from vaultd.services.accounts import accounts
from vaultd.services.members import members, sessions, sign_in_links
from vaultd.services.members.actor import operator
from vaultd.services.members.roles import Role


def sign_in_link(account_id: str, email: str, as_json: JsonFlag = False) -> None:
    """Print a URL that signs the member in once, within 15 minutes. Hand it over as you would
    a password: whoever opens it first is signed in as the member."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        url = await sign_in_links.create_link(db, settings, account_id, email)
        return {"url": url, "expiresInSeconds": sign_in_links.LINK_MINUTES * 60}

    result = run(action)
    emit(result, want_json(as_json), result["url"])


ALREADY_SET_UP = ("this vault already has accounts: add an admin with `vault-admin members add "
                  "ACCOUNT EMAIL --role admin`, then `vault-admin members sign-in-link ACCOUNT "
                  "EMAIL`")


def add_first_admin(
    email: str,
    account_name: Annotated[str, typer.Option(
        "--account-name", help="The new account's name (default: the email's domain).")] = "",
    plan: Annotated[str, typer.Option("--plan", help="free, pro or business.")] = "pro",
    as_json: JsonFlag = False,
) -> None:
    """The quick start's step to the console: on a vault without accounts, create one, make
    EMAIL its admin and print a one-time sign-in link. Run again for an admin it made (a link
    expired): a new link. A vault that already has accounts is refused (use `members add`)."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        address = members.parse_email(email)
        admin_of = [c for c in await sessions.memberships(db, address) if c.role == "admin"]
        if admin_of:
            account_id = admin_of[0].account_id
        else:
            if await accounts.any_account(db):
                raise Conflict(ALREADY_SET_UP)
            account = await accounts.create_account(
                db, account_name or address.partition("@")[2], plan)
            await members.add_member(db, operator(account.id), address, role=Role.ADMIN)
            account_id = account.id
        url = await sign_in_links.create_link(db, settings, account_id, address)
        return {"accountId": account_id, "email": address, "url": url,
                "expiresInSeconds": sign_in_links.LINK_MINUTES * 60}

    result = run(action)
    emit(result, want_json(as_json),
         f"{result['url']}\nOpen it within {sign_in_links.LINK_MINUTES} minutes to sign in "
         f"as {result['email']} (it works once).")

"""vault-admin members sign-in-link: a one-time sign-in URL for a member (the first admin, or
any member where no SMTP server is set for mailed codes)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from admin_cli.context import run, want_json
from admin_cli.output import emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.members import sign_in_links

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def sign_in_link(account_id: str, email: str, as_json: JsonFlag = False) -> None:
    """Print a URL that signs the member in once, within 15 minutes. Hand it over as you would
    a password: whoever opens it first is signed in as the member."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        url = await sign_in_links.create_link(db, settings, account_id, email)
        return {"url": url, "expiresInSeconds": sign_in_links.LINK_MINUTES * 60}

    result = run(action)
    emit(result, want_json(as_json), result["url"])

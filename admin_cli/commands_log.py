"""vault-admin log export ...

The csv export is opened in spreadsheets, and some of its values come from viewers (a viewer
email is whatever the account's site was given: `=cmd|'/c_calc'!A0@evil.example` is a valid
address). A value a spreadsheet would read as a formula is written with a leading `'`, as
OWASP's "CSV Injection" advice says; the jsonl export keeps every value as it is.
"""

from __future__ import annotations

import csv
import json
import sys
from typing import Annotated

import typer

from admin_cli.context import run
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import Forbidden
from vaultd.services.accounts import accounts
from vaultd.services.common import access_log, feed
from vaultd.services.common.spreadsheet import safe_cell

app = typer.Typer(no_args_is_help=True, help="Access log export.")

@app.command("export")
def export(
    account_id: str,
    fmt: Annotated[str, typer.Option("--format", help="jsonl or csv.")] = "jsonl",
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format jsonl.")] = False,
) -> None:
    """Write an account's whole access log to stdout, newest first (Business plan only)."""
    if as_json:
        fmt = "jsonl"

    async def action(_: Settings, db: Db) -> int:
        if fmt not in ("jsonl", "csv"):
            raise ValueError("--format must be jsonl or csv")
        account = await accounts.get_account(db, account_id)
        if not account.plan.accessLogExport:
            raise Forbidden(
                f"access log export needs the Business plan (account is on {account.plan.name})"
            )
        # A field the columns do not know is left out rather than ending the export half-way.
        writer = (csv.DictWriter(sys.stdout, access_log.ENTRY_FIELDS, extrasaction="ignore")
                  if fmt == "csv" else None)
        if writer:
            writer.writeheader()
        count = 0
        async for entry in feed.export(db, account_id):
            if writer:
                writer.writerow({name: safe_cell(value) for name, value in entry.items()})
            else:
                sys.stdout.write(json.dumps(entry, ensure_ascii=False) + "\n")
            count += 1
        return count

    run(action)

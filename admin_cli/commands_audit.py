"""vault-admin audit export | verify | keys | rotate-key: the tamper-evident audit log
(docs/audit.md). `verify` runs the stand-alone verifier (`admin_cli/audit_verify.py`) offline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from admin_cli import audit_verify
from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.runtime import KeyringSource
from vaultd.services.accounts import accounts
from vaultd.services.audit import export as audit_export
from vaultd.services.audit import keys

app = typer.Typer(no_args_is_help=True, help="The tamper-evident audit log.")


@app.command("export")
def export(account_id: str, dest: Path, as_json: JsonFlag = False) -> None:
    """Write an account's verifiable export (entries, proofs, checkpoints) to DEST."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        await accounts.get_account(db, account_id)  # an unknown account: one line, exit 1
        partial = dest.with_name(f".{dest.name}.partial")
        with partial.open("w", encoding="utf-8") as out:
            async for piece in audit_export.export(db, account_id, settings.audit_origin):
                out.write(piece)
        os.replace(partial, dest)  # a stopped export leaves no half-written DEST
        return {"account": account_id, "path": str(dest)}

    result = run(action)
    emit(result, want_json(as_json), f"audit export of {account_id} written to {dest}")


@app.command("verify")
def verify(
    export_path: Annotated[Path, typer.Argument(metavar="EXPORT")],
    since: Annotated[Path | None, typer.Option(help="An older export of the same log.")] = None,
    key: Annotated[list[str] | None, typer.Option(
        help="Trust only this verifier key (repeatable).")] = None,
) -> None:
    """Check an export offline; exit 1 naming every entry or checkpoint that fails."""
    argv = [str(export_path)]
    if since is not None:
        argv += ["--since", str(since)]
    for text in key or []:
        argv += ["--key", text]
    raise typer.Exit(audit_verify.main(argv))


@app.command("keys")
def list_keys(as_json: JsonFlag = False) -> None:
    """The checkpoint signing keys, current and retired (as GET /v1/audit/keys lists them)."""
    async def action(_: Settings, db: Db) -> list[dict[str, Any]]:
        return await keys.published(db)

    emit(run(action), want_json(as_json))


@app.command("rotate-key")
def rotate_key(as_json: JsonFlag = False) -> None:
    """A new checkpoint signing key; the old one's private half is deleted, its public half
    stays published so its checkpoints still verify."""
    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        made = await keys.rotate(db, KeyringSource(settings).current(), settings.audit_origin)
        return keys.key_json(made)

    result = run(action)
    emit(result, want_json(as_json), f"new audit signing key {result['verifierKey']}")

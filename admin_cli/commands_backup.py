"""vault-admin backup DEST | backup verify DEST | restore BACKUP --data-dir NEW."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click import Context as ClickContext  # typer 0.29 vendors click
from typer.core import TyperGroup

from admin_cli.commands_storage import with_backend
from admin_cli.context import STATE, guarded, want_json
from admin_cli.output import JsonFlag, emit
from backends.base import BlobBackend
from vaultd.config import Settings, settings_from
from vaultd.db import Db
from vaultd.services.storage import backup_verify
from vaultd.services.storage import restore as restoring
from vaultd.services.storage.backup import create_backup
from vaultd.services.storage.storage_tools import existing_keyring
from vaultd.version import VERSION

DEFAULT_COMMAND = "create"


class BackupGroup(TyperGroup):
    """`backup DEST` means `backup create DEST`; `backup verify DEST` is the other command."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        positional = [arg for arg in args if not arg.startswith("-")]
        if positional and positional[0] not in self.commands:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=BackupGroup, no_args_is_help=True,
                  help="Back up a vault while vaultd runs (vault-admin backup DEST), or verify "
                       "a backup (vault-admin backup verify DEST).")
BackupDir = Annotated[Path, typer.Argument(metavar="DEST", help="The backup directory.")]


@app.command(DEFAULT_COMMAND)
def create(dest: BackupDir, as_json: JsonFlag = False) -> None:
    """Back up the database, the blobs and a manifest into DEST (new or empty); the default:
    vault-admin backup DEST. The master key is not in it: back it up apart."""
    async def action(settings: Settings, db: Db, backend: BlobBackend) -> dict[str, Any]:
        existing_keyring(settings)  # no key, no backup: fail before writing anything
        return await create_backup(db, backend, lambda: existing_keyring(settings), dest,
                                   VERSION)

    report = with_backend(action)
    emit(report, want_json(as_json), _created_text(report))
    if report["missingBlobs"]:
        raise typer.Exit(1)


def _created_text(report: dict[str, Any]) -> str:
    lines = [f"file {e['fileId']}: blob {e['blob']} is missing from storage (see vault-admin "
             "storage verify)" for e in report["missingBlobs"]]
    lines += [f"file {file_id} was deleted during the backup: left out"
              for file_id in report["deletedDuringBackup"]]
    documents = sum(report["collections"].values())
    how = "copied" if report["blobsCopied"] else "listed with checksums (copy the container)"
    lines.append(f"backed up {documents} documents of {len(report['collections'])} collections "
                 f"and {report['blobs']} blobs ({report['blobBytes']} bytes, {how}) to "
                 f"{report['dest']}")
    lines.append(f"master key {report['masterKeyId']} is not in the backup: keep it apart")
    return "\n".join(lines)


KeyFile = Annotated[Path | None, typer.Option(
    "--master-key-file", help="The vault's master key file (the backup does not hold it); "
                              "default: the configured master key.")]
AcceptUnauthenticated = Annotated[bool, typer.Option(
    "--accept-unauthenticated",
    help="Read a backup whose manifest carries no MAC (made by an older vaultd): its "
         "checksums then show only accidents, not changes made on purpose.")]


@app.command("verify")
def verify(dest: BackupDir, master_key_file: KeyFile = None,
           accept_unauthenticated: AcceptUnauthenticated = False,
           as_json: JsonFlag = False) -> None:
    """Check the manifest's MAC under the master key, every checksum, that every file record's
    blob is in the backup, and every copied blob's encryption tags; exit 1 naming the
    problems."""
    settings = guarded(STATE.settings)
    summary = guarded(lambda: asyncio.run(backup_verify.verify_authentic(
        dest, restoring.supplied_keyring(settings, master_key_file),
        accept_unauthenticated)).summary())
    emit(summary, want_json(as_json), _verified_text(summary))
    if summary["problems"]:
        raise typer.Exit(1)


def _verified_text(summary: dict[str, Any]) -> str:
    lines = [f"problem: {problem}" for problem in summary["problems"]]
    verdict = "ok" if summary["ok"] else f"{len(summary['problems'])} problems"
    mac = "manifest MAC verified" if summary["manifestAuthenticated"] else (
        "manifest NOT authenticated")
    lines.append(f"{verdict}: {mac}, {summary['filesChecked']} files ({summary['bytesChecked']} "
                 f"bytes) checked, {summary['blobsDecrypted']} blobs decrypted, "
                 f"{summary['fileRecordsChecked']} file records have their blobs; "
                 f"backup of vaultd {summary['vaultVersion']} finished "
                 f"{summary['finishedAt']}")
    return "\n".join(lines)


def restore(
    backup: Annotated[Path, typer.Argument(metavar="BACKUP", help="The backup directory.")],
    data_dir: Annotated[str | None, typer.Option(
        "--data-dir", metavar="NEW", help="The new, empty data directory to restore into.")] = None,
    master_key_file: Annotated[Path | None, typer.Option(
        "--master-key-file", help="The vault's master key file (the backup does not hold it); "
                                  "copied into the new data directory.")] = None,
    accept_unauthenticated: AcceptUnauthenticated = False,
    as_json: JsonFlag = False,
) -> None:
    """Rebuild a vault from a backup into a new data directory (or the empty database of
    mongodb.uri), after checking the backup (MAC, checksums, blobs) and the master key's
    fingerprint."""
    settings = guarded(lambda: settings_from(STATE.config,
                                             {"data_dir": data_dir or STATE.data_dir}))
    report = guarded(lambda: asyncio.run(restoring.restore_vault(
        settings, backup, master_key_file, accept_unauthenticated)))
    emit(report, want_json(as_json), _restored_text(report))
    if report["absentFromStorage"]:
        raise typer.Exit(1)


def _restored_text(report: dict[str, Any]) -> str:
    lines = [f"blob {name} is missing from {report['storageBackend']} storage, or of another "
             "size: copy the container first" for name in report["absentFromStorage"]]
    documents = sum(report["collections"].values())
    where = ("the database of mongodb.uri" if report["database"] == "mongodb.uri"
             else f"{report['dataDir']}")
    lines.append(f"restored {documents} documents and {report['blobs']} blobs into {where} "
                 f"(backup of vaultd {report['vaultVersion']}, {report['backupFinishedAt']})")
    if report["masterKeyFile"]:
        lines.append(f"master key copied to {report['masterKeyFile']}")
    return "\n".join(lines)

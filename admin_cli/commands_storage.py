"""vault-admin storage backends | verify | gc | migrate."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

import backends
from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from backends.base import BackendUnavailable, BlobBackend
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.runtime import make_backend
from vaultd.services.files.blobs import BlobStore
from vaultd.services.storage import storage_tools

app = typer.Typer(no_args_is_help=True, help="Check, clean up and migrate stored blobs.")
T = TypeVar("T")

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"--older-than {text!r}: expected a number with s, m, h or d (e.g. 1h)")
    return float(match[1]) * _UNIT_SECONDS[match[2]]


def open_backend(settings: Settings) -> BlobBackend:
    return make_backend(settings)  # a missing SDK is a ConfigError: one line, exit 1


def with_backend(action: Callable[[Settings, Db, BlobBackend], Awaitable[T]]) -> T:
    """`run`, with the configured backend open for the action and storage outages as one line."""
    async def wrapped(settings: Settings, db: Db) -> T:
        backend = open_backend(settings)
        try:
            return await action(settings, db, backend)
        except BackendUnavailable as exc:
            raise ValueError(f"{backend.name} {exc}; check the storage settings, retry") from None
        finally:
            await backend.close()

    return run(wrapped)


@app.command("backends")
def list_backends(as_json: JsonFlag = False) -> None:
    """The registered backends (`storage.backend` choices): built-in or from an installed
    distribution's `vaultd.storage_backends` entry point, and whether each can be loaded here."""
    rows = []
    for name, spec in backends.BACKENDS.items():
        try:
            backends.backend_module(name)
            problem = ""
        except backends.BackendConfigError as exc:
            problem = str(exc)
        rows.append({"name": name, "module": spec.module, "source": spec.source,
                     "available": not problem, "problem": problem})
    emit(rows, want_json(as_json))


@app.command("verify")
def verify(
    account: Annotated[str | None, typer.Option("--account", help="Only this account.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check that every file's blob exists, decrypts and authenticates; exit 1 if any fails."""
    async def action(settings: Settings, db: Db, backend: BlobBackend) -> dict[str, Any]:
        store = BlobStore(backend, storage_tools.existing_keyring(settings))
        return (await storage_tools.verify(db, store, account)).to_json()

    report = with_backend(action)
    emit(report, want_json(as_json), _verify_text(report))
    if report["missing"] or report["corrupt"]:
        raise typer.Exit(1)


def _verify_text(report: dict[str, Any]) -> str:
    lines = [f"missing  file {e['fileId']}  account {e['accountId']}  blob {e['blob']}"
             for e in report["missing"]]
    lines += [f"corrupt  file {e['fileId']}  account {e['accountId']}  {e['problem']}"
              for e in report["corrupt"]]
    lines.append(f"checked {report['checked']} files: {report['ok']} ok, "
                 f"{len(report['missing'])} missing, {len(report['corrupt'])} corrupt")
    return "\n".join(lines)


@app.command("gc")
def gc(
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Only remove orphan blobs older than this (s, m, h, d).")] = "1h",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report, remove nothing.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Remove blobs no file points to (left by crashes); report files whose blob is gone."""
    async def action(_: Settings, db: Db, backend: BlobBackend) -> dict[str, Any]:
        return await storage_tools.gc(db, backend, parse_duration(older_than), dry_run)

    report = with_backend(action)
    emit(report, want_json(as_json), _gc_text(report))


def _gc_text(report: dict[str, Any]) -> str:
    verb = "would remove" if report["dryRun"] else "removed"
    lines = [f"{verb} orphan blob {name}" for name in report["orphans"]]
    lines += [f"file {e['fileId']} (account {e['accountId']}) has no blob {e['blob']}"
              for e in report["missingBlobs"]]
    lines.append(f"{verb} {len(report['orphans'])} orphan blobs of {report['blobs']}; kept "
                 f"{len(report['keptYoung'])} younger than {report['olderThanSeconds']:g}s, "
                 f"{report['keptInFlight']} of uploads in progress, "
                 f"{len(report['foreign'])} not named by vaultd; "
                 f"{len(report['missingBlobs'])} files without a blob")
    if report["temporariesRemoved"]:
        lines.append(f"removed {report['temporariesRemoved']} temporaries of interrupted uploads")
    return "\n".join(lines)


@app.command("migrate")
def migrate(
    to: Annotated[str, typer.Option(
        "--to", help=f"Backend to copy every blob to: {', '.join(backends.BACKENDS)}.")],
    as_json: JsonFlag = False,
) -> None:
    """Copy every blob to the other backend and verify it; safe to re-run."""
    async def action(settings: Settings, db: Db, source: BlobBackend) -> dict[str, Any]:
        known = sorted(backends.BACKENDS)
        if to not in known:
            raise ValueError(f"--to must be one of {', '.join(known)}")
        if to == settings.storage_backend:
            raise ValueError(f"storage.backend is already {to!r}: --to names the backend to "
                             "copy to")
        keyring = storage_tools.existing_keyring(settings)
        target = open_backend(dataclasses.replace(settings, storage_backend=to))
        try:
            return await storage_tools.migrate(db, keyring, source, target)
        finally:
            await target.close()

    report = with_backend(action)
    emit({**report, "next": _next_steps(report)}, want_json(as_json), _migrate_text(report))
    if report["failed"]:
        raise typer.Exit(1)


def _next_steps(report: dict[str, Any]) -> str:
    if report["failed"]:
        return ("some blobs could not be migrated (see vault-admin storage verify); fix them and "
                "re-run before switching")
    to = report["to"]
    return (f"set storage.backend = \"{to}\" (VAULTD_STORAGE_BACKEND={to}) on every vaultd node "
            f"and restart them; re-run this command after stopping uploads to copy late "
            f"arrivals; the blobs in {report['from']} are left in place")


def _migrate_text(report: dict[str, Any]) -> str:
    lines = [f"failed   file {e['fileId']}  account {e['accountId']}  {e['problem']}"
             for e in report["failed"]]
    lines.append(f"{report['from']} -> {report['to']}: {report['files']} files, "
                 f"{report['copied']} copied, {report['alreadyPresent']} already present, "
                 f"{len(report['failed'])} failed")
    lines.append(f"next: {_next_steps(report)}")
    return "\n".join(lines)

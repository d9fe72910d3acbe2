"""vault-admin doctor: the render sandbox on this machine, layer by layer, then the vault.

It starts one real render worker the way vaultd does (zygote, confinement) and prints what the
worker reports: each layer active or missing. It then converts a tiny document with the Office
converter (when `upload.office` is on) and prints whether LibreOffice is installed, converted,
and which layers confined it. Exit code 1 when a layer is missing and the settings say
`render.sandbox = "required"`.

Where the data directory holds a vault, it then checks the vault itself
(`services.storage.health`): the database answers, the disks have room, the master key file is
private, and the newest backup's age. Exit code 1 on a problem there too.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import typer

from admin_cli.context import STATE, run
from admin_cli.output import JsonFlag
from render.office import probe as office_probe
from render.pool.render_pool import RenderPool
from render.sandbox.layers import ALL_LAYERS, DESCRIPTIONS, Layer, report
from vaultd.config import Settings, load_settings, read_config_file
from vaultd.db import Db
from vaultd.services.storage import health
from vaultd.startup import holds_vault


async def probe(sandbox: str) -> dict[str, Any]:
    pool = RenderPool(workers=1, queue_size=0, sandbox="auto")
    try:
        await pool.wait_ready()
        state = pool.sandbox_state()
    finally:
        await pool.close()
    state["mode"] = sandbox
    return state


async def probe_converter(enabled: bool, timeout: float) -> dict[str, Any]:
    """The Office converter's state: installed, converted a tiny document, its layers."""
    from vaultd.services.files.office import MEMORY_LIMIT  # the server's own limit

    if not enabled:
        return {"enabled": False, "installed": None, "converted": None, "layers": None,
                "complete": False}
    installed, converted, mask = await office_probe.probe(timeout, MEMORY_LIMIT)
    complete = converted and Layer(mask) == ALL_LAYERS
    return {"enabled": True, "installed": installed, "converted": converted,
            "layers": report(mask) if converted else None, "complete": complete}


def _print_converter(state: dict[str, Any]) -> None:
    if not state["enabled"]:
        typer.echo("office converter: off (upload.office = false)")
        return
    if not state["installed"]:
        typer.echo("office converter: LibreOffice not installed: Office uploads are refused (415)")
        return
    for name, active in (state["layers"] or {}).items():
        typer.echo(f"{'active ' if active else 'MISSING'}  converter {name}")
    verdict = "converted a test document" if state["converted"] else "FAILED to convert"
    confined = "every layer active" if state["complete"] else "some layers missing"
    typer.echo(f"office converter: installed, {verdict}, {confined}")


def doctor(
    as_json: JsonFlag = False,
) -> None:
    """Check the render sandbox: each confinement layer, active or missing."""
    settings = load_settings(read_config_file(STATE.config) if STATE.config else {})
    state = asyncio.run(probe(settings.render_sandbox))
    converter = asyncio.run(probe_converter(settings.upload_office,
                                            settings.upload_office_timeout_seconds))
    layers: dict[str, bool] = state["layers"] or {}
    vault = _vault_findings()
    if as_json or STATE.json:
        typer.echo(json.dumps({"renderSandbox": state, "officeConverter": converter,
                               "vault": vault}, indent=2))
    else:
        describe = {(layer.name or "").lower(): text for layer, text in DESCRIPTIONS.items()}
        describe["server_not_dumpable"] = "PR_SET_DUMPABLE 0 on the server"
        for name, active in layers.items():
            mark = "active " if active else "MISSING"
            typer.echo(f"{mark}  {name:<20} {describe.get(name, '')}")
        typer.echo(f"render.sandbox = {state['mode']!r}: "
                   + ("every layer active" if state["complete"] else "some layers missing"))
        _print_converter(converter)
        _print_vault(vault)
    converter_short = converter["installed"] and not converter["complete"]
    if state["mode"] == "required" and (not state["complete"] or converter_short):
        raise typer.Exit(1)
    if any(finding["verdict"] == "problem" for finding in vault or []):
        raise typer.Exit(1)


def _vault_findings() -> list[dict[str, str]] | None:
    """The vault's checks, or None where the data directory holds no vault."""
    if not holds_vault(STATE.settings()):
        return None

    async def action(settings: Settings, db: Db) -> list[health.Finding]:
        return await health.check_vault(settings, db)

    return [{"name": f.name, "verdict": f.verdict, "detail": f.detail} for f in run(action)]


def _print_vault(findings: list[dict[str, str]] | None) -> None:
    if findings is None:
        typer.echo(f"vault: none in {STATE.settings().data_path.resolve()}: "
                   "database, disk, key file and backup not checked")
        return
    marks = {"ok": "ok     ", "warning": "WARNING", "problem": "PROBLEM"}
    for finding in findings:
        typer.echo(f"{marks[finding['verdict']]}  {finding['name']:<20} {finding['detail']}")


__all__ = ["Layer", "doctor", "probe"]

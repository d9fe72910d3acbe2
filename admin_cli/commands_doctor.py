"""vault-admin doctor: the render sandbox on this machine, layer by layer.

It starts one real render worker the way vaultd does (zygote, confinement) and prints what the
worker reports: each layer active or missing. Exit code 1 when a layer is missing and the
settings say `render.sandbox = "required"`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer

from admin_cli.context import STATE
from render.pool import RenderPool
from render.sandbox.layers import DESCRIPTIONS, Layer
from vaultd.config import load_settings, read_config_file


async def probe(sandbox: str) -> dict[str, Any]:
    pool = RenderPool(workers=1, queue_size=0, sandbox="auto")
    try:
        await pool.wait_ready()
        state = pool.sandbox_state()
    finally:
        await pool.close()
    state["mode"] = sandbox
    return state


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check the render sandbox: each confinement layer, active or missing."""
    settings = load_settings(read_config_file(STATE.config) if STATE.config else {})
    state = asyncio.run(probe(settings.render_sandbox))
    layers: dict[str, bool] = state["layers"] or {}
    if as_json or STATE.json:
        typer.echo(json.dumps({"renderSandbox": state}, indent=2))
    else:
        describe = {(layer.name or "").lower(): text for layer, text in DESCRIPTIONS.items()}
        describe["server_not_dumpable"] = "PR_SET_DUMPABLE 0 on the server"
        for name, active in layers.items():
            mark = "active " if active else "MISSING"
            typer.echo(f"{mark}  {name:<20} {describe.get(name, '')}")
        typer.echo(f"render.sandbox = {state['mode']!r}: "
                   + ("every layer active" if state["complete"] else "some layers missing"))
    if state["mode"] == "required" and not state["complete"]:
        raise typer.Exit(1)


__all__ = ["Layer", "doctor", "probe"]

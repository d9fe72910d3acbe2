"""vault-admin trace IMAGE: which page view, in any account, a leaked image comes from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from admin_cli.context import guarded, run, want_json
from admin_cli.output import emit
from render.forensic.trace_task import sniff, trace_image
from render.pool import RenderPool
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages import mark_key
from vaultd.services.storage import storage_tools
from vaultd.services.tracing import trace as tracing


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    if sniff(data) is None:
        raise ValueError(f"{path} is neither a JPEG nor a PNG")
    return data


async def _decode_confined(settings: Settings, data: bytes,
                           layouts: tuple[bytes | None, ...]) -> int | None:
    """The render id in the image, decoded in one sandboxed render worker like the API's: a
    leaked image is untrusted input, and this process can read the master key."""
    pool = RenderPool(workers=1, queue_size=0, timeout_seconds=settings.render_timeout_seconds,
                      max_tasks_per_worker=1,
                      memory_limit_bytes=settings.render_memory_limit_mb << 20,
                      sandbox=settings.render_sandbox)
    try:
        await pool.wait_ready()
        for layout_key in layouts:  # the deployment's, then the published one if it served it
            sealed = await run_task(pool, trace_image, data, layout_key,
                                    settings.render_long_side)
            if sealed is not None:
                return sealed
        return None
    finally:
        await pool.close()


def trace(
    image: Annotated[Path, typer.Argument(help="The leaked page image (JPEG or PNG).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Find the page view (any account) a leaked image comes from; logs a `trace` entry."""
    data = guarded(lambda: _read(image))

    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        mark = await mark_key.mark_cipher(db, storage_tools.existing_keyring(settings))
        sealed = await _decode_confined(settings, data, mark.trace_layouts)
        if sealed is None:
            return {"found": False}
        matches = await tracing.find_matches(db, mark.open(sealed), None)
        return {"found": True, "matches": matches} if matches else {"found": False}

    result = run(action)
    lines = [f"{m['traceCode']}  {m['at']}  {m['viewerEmail']}  {m['fileName']}  page {m['page']}"
             f"  ip {m['ip']}  ({m['evidence']})" for m in result.get("matches", [])]
    emit(result, want_json(as_json), "\n".join(lines) or "no match: the image carries no "
         "mark of a page served by this vault")

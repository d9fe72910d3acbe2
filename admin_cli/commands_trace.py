"""vault-admin trace IMAGE: which page view, in any account, a leaked image comes from: the
stages of POST /v1/trace (`services.tracing.reader`), in a confined worker of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from admin_cli.context import guarded, run, want_json
from admin_cli.output import JsonFlag, emit
from render.forensic_wire.image_kinds import sniff
from render.pool.render_pool import RenderPool
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.pages import mark_key
from vaultd.services.storage import storage_tools
from vaultd.services.tracing import trace as tracing
from vaultd.services.tracing.reader import LeakReader, Reading


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    if sniff(data) is None:
        raise ValueError(f"{path} is neither a JPEG nor a PNG")
    return data


async def _read_confined(settings: Settings, db: Db, data: bytes,
                         account: str | None) -> Reading | None:
    """What the image names, read by the API's stages (`LeakReader`) in one sandboxed render
    worker of this command's own: a leaked image is untrusted input, and this process can read
    the master key."""
    mark = await mark_key.mark_cipher(db, storage_tools.existing_keyring(settings))
    pool = RenderPool(workers=1, queue_size=0, timeout_seconds=settings.render_timeout_seconds,
                      max_tasks_per_worker=1,
                      memory_limit_bytes=settings.render_memory_limit_mb << 20,
                      sandbox=settings.render_sandbox)
    try:
        await pool.wait_ready()
        reader = LeakReader(db, pool, mark, settings.render_long_side,
                            settings.trace_placement_mark, settings.watermark_timezone)
        return await (reader.read(data, account) if account else reader.read_anywhere(data))
    finally:
        await pool.close()


def trace(
    image: Annotated[Path, typer.Argument(help="The leaked page image (JPEG or PNG).")],
    account: Annotated[str | None, typer.Option(
        "--account", help="Search this account only (as POST /v1/trace does).")] = None,
    trace_code: Annotated[str | None, typer.Option(
        "--trace-code", help="The code typed off the page's strip (visible evidence).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Find the page view a leaked image comes from, by the invisible mark, the placement
    mark and a typed trace code, as POST /v1/trace reads it; logs a `trace` entry."""
    data = guarded(lambda: _read(image))
    typed = guarded(lambda: tracing.parse_typed_code(trace_code))

    async def action(settings: Settings, db: Db) -> dict[str, Any]:
        reading = await _read_confined(settings, db, data, account)
        return await tracing.answer(db, reading, typed, account)

    result = run(action)
    lines = [f"{m['traceCode']}  {m['at']}  {m['viewerEmail']}  {m['fileName']}  page {m['page']}"
             f"  ip {m['ip']}  ({m['evidence']})" for m in result.get("matches", [])]
    emit(result, want_json(as_json), "\n".join(lines) or "no match: the image carries no "
         "mark of a page served by this vault")

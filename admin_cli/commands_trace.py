"""vault-admin trace IMAGE: which page view, in any account, a leaked image comes from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from admin_cli.context import guarded, run, want_json
from admin_cli.output import emit
from render.forensic.trace_task import sniff, trace_image
from render.model import Unreadable
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import Unprocessable
from vaultd.services import trace as tracing


def _read(path: Path) -> int | None:
    """The render id in the image file, decoded here (an operator's own file, same guards as
    the API's worker task)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    if sniff(data) is None:
        raise ValueError(f"{path} is neither a JPEG nor a PNG")
    try:
        return trace_image(data)
    except Unreadable as exc:
        raise Unprocessable(str(exc)) from None


def trace(
    image: Annotated[Path, typer.Argument(help="The leaked page image (JPEG or PNG).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Find the page view (any account) a leaked image comes from; logs a `trace` entry."""
    render_id = guarded(lambda: _read(image))

    async def action(_: Settings, db: Db) -> dict[str, Any]:
        if render_id is None:
            return {"found": False}
        matches = await tracing.find_matches(db, render_id, None)
        return {"found": True, "matches": matches} if matches else {"found": False}

    result = run(action)
    lines = [f"{m['traceCode']}  {m['at']}  {m['viewerEmail']}  {m['fileName']}  page {m['page']}"
             f"  ip {m['ip']}  ({m['evidence']})" for m in result.get("matches", [])]
    emit(result, want_json(as_json), "\n".join(lines) or "no match: the image carries no "
         "mark of a page served by this vault")

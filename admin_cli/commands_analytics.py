"""vault-admin files analytics FILE_ID: the per-page engagement table, no dashboard needed."""

from __future__ import annotations

import typer

from admin_cli.context import run, want_json
from admin_cli.output import JsonFlag, emit
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.analytics.analytics_report import FileAnalytics, file_analytics

app = typer.Typer(no_args_is_help=True, help="Files: engagement analytics.")


@app.command("analytics")
def analytics(file_id: str, as_json: JsonFlag = False) -> None:
    """Per page: views, unique viewers, seconds and median seconds; then each viewer."""
    async def action(_: Settings, db: Db) -> FileAnalytics:
        return await file_analytics(db, None, file_id)

    result = run(action)
    emit(result, want_json(as_json), as_table(result))


def as_table(result: FileAnalytics) -> str:
    rows = [f"{'page':>4}  {'views':>6}  {'viewers':>7}  {'seconds':>9}  {'median':>8}",
            "-" * 42]
    rows += [f"{p['page']:>4}  {p['views']:>6}  {p['uniqueViewers']:>7}  {p['seconds']:>9.1f}  "
             f"{p['medianSeconds']:>8.1f}" for p in result["pages"]]
    rows.append("")
    for viewer in result["viewers"]:
        rows.append(f"{viewer['viewerEmail']}: {viewer['pagesViewed']}/{result['pageCount']} "
                    f"pages ({viewer['completion']:.0%}), {viewer['totalSeconds']:.1f} s, "
                    f"last seen {viewer['lastSeenAt'] or 'never'}")
    return "\n".join(rows) if result["viewers"] else "\n".join([*rows, "(no viewer yet)"])

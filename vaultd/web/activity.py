"""GET /v1/activity: the account activity log, newest first, in pages or as an export.

The export (`format=csv` or `jsonl`) streams the whole log page by page: memory holds one page,
and each page's read has the usual database deadline (the export as a whole has none)."""

from __future__ import annotations

import csv
import io
import json

from vaultd.db_deadline import part_deadline
from vaultd.errors import InvalidRequest, PlanLimitReached
from vaultd.services.common.spreadsheet import safe_cell
from vaultd.services.members import activity
from vaultd.web.base import BaseHandler
from vaultd.web.permissions import READ

EXPORT_PAGE = activity.MAX_PER_PAGE


def export_refusal(plan_name: str) -> str:
    return f"exporting the log needs the Business plan (account is on {plan_name})"
FORMATS = ("json", "csv", "jsonl")


class ActivityHandler(BaseHandler):
    db_deadline = False  # an export's reads each get the deadline, the export none
    paced = False  # an export's time is the client's reading

    async def get(self) -> None:
        assert self.account is not None
        fmt = self.get_query_argument("format", "json")
        if fmt not in FORMATS:
            raise InvalidRequest("format must be json, csv or jsonl")
        if fmt != "json" and not self.account.plan.accessLogExport:
            # The spec's plans: "Access log export" is Business only; the pages stay for all.
            raise PlanLimitReached(export_refusal(self.account.plan.name))
        raw_cursor = self.get_query_argument("cursor", None)
        after = activity.Cursor.decode(raw_cursor) if raw_cursor is not None else None
        # Checked whatever the format (an export ignores it): bad input is refused everywhere.
        per_page = activity.parse_per_page(self.get_query_argument("perPage", None))
        if fmt == "json":
            with part_deadline(self.ctx.settings.server_db_deadline_seconds):
                page = await activity.page(self.ctx.db, self.account.id, per_page=per_page,
                                           after=after)
            self.send_json(200, {"entries": [activity.entry_json(doc) for doc in page.entries],
                                 "next": page.next.encode() if page.next else None})
            return
        await self._export(fmt, after)

    async def _export(self, fmt: str, after: activity.Cursor | None) -> None:
        assert self.account is not None
        csv_out = fmt == "csv"
        self.set_header("Content-Type", "text/csv; charset=utf-8" if csv_out
                        else "application/jsonl; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="activity.{fmt}"')
        if csv_out:
            self.write(",".join(activity.FIELDS) + "\r\n")
        while True:
            with part_deadline(self.ctx.settings.server_db_deadline_seconds):
                page = await activity.page(self.ctx.db, self.account.id, per_page=EXPORT_PAGE,
                                           after=after)
            self.write(_csv_rows(page) if csv_out else _jsonl_rows(page))
            await self.flush()
            if page.next is None:
                break
            after = page.next
        self.finish()


def _csv_rows(page: activity.Page) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, activity.FIELDS, lineterminator="\r\n")
    for doc in page.entries:
        writer.writerow({k: safe_cell(v) for k, v in activity.entry_row(doc).items()})
    return out.getvalue()


def _jsonl_rows(page: activity.Page) -> str:
    return "".join(json.dumps(activity.entry_json(doc), ensure_ascii=False) + "\n"
                   for doc in page.entries)


ROUTES = [(r"/v1/activity", ActivityHandler)]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/activity": {"GET": READ},
}

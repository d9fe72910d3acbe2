"""A room's index: every item with its number, path, name, type and page count."""

from __future__ import annotations

import csv
import io
from typing import Any

from vaultd.services.rooms.tree import Node, walk

INDEX_FIELDS = ("number", "path", "name", "type", "pageCount")
# A cell starting with one of these is a formula in Excel, LibreOffice and Sheets (the same
# rule as `vault-admin log export --format csv`, admin_cli.commands_log).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def index_rows(tree: list[Node]) -> list[dict[str, Any]]:
    return [{"number": node.number, "path": node.path, "name": node.name,
             "type": node.item["type"],
             "pageCount": node.file.page_count if node.file else None}
            for node in walk(tree)]


def index_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, INDEX_FIELDS, lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if value is None else spreadsheet_safe(value)
                         for key, value in row.items()})
    return out.getvalue()

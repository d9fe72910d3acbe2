"""A room's index: every item with its number, path, name, type and page count."""

from __future__ import annotations

import csv
import io
from typing import Any

from vaultd.services.common.spreadsheet import safe_cell
from vaultd.services.rooms.tree import Node, walk

INDEX_FIELDS = ("number", "path", "name", "type", "pageCount")
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
        writer.writerow({key: "" if value is None else safe_cell(value)
                         for key, value in row.items()})
    return out.getvalue()

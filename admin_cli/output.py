"""How vault-admin prints: a JSON document with --json; for people, `key: value` lines for one
record and aligned columns for a list, the same fields either way, never Python's reprs."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

# Every command's --json flag.
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def emit(data: Any, as_json: bool, text: str | None = None) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write((text if text is not None else human(data)) + "\n")


def human(data: Any) -> str:
    if isinstance(data, list):
        return table([flatten(row) if isinstance(row, dict) else {"": row} for row in data])
    if isinstance(data, dict):
        return record(flatten(data))
    return scalar(data)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested records as dotted keys (`plan.name`), every value as text."""
    out: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = scalar(value)
    return out


def record(fields: dict[str, str]) -> str:
    width = max((len(key) for key in fields), default=0) + 1
    return "\n".join(f"{key + ':':<{width}} {value}" for key, value in fields.items())


def table(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "(none)"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    widths = {c: max(len(c), *(len(row.get(c, "-")) for row in rows)) for c in columns}
    lines = ["  ".join(f"{c:<{widths[c]}}" for c in columns)]
    lines += ["  ".join(f"{row.get(c, '-'):<{widths[c]}}" for c in columns) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(scalar(item) for item in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={scalar(v)}" for k, v in value.items()) or "-"
    return str(value)


def fail(message: str, code: int = 1) -> None:
    sys.stderr.write(f"vault-admin: {message}\n")
    raise SystemExit(code)

"""How vault-admin prints: a JSON document with --json, short aligned text otherwise."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit(data: Any, as_json: bool, text: str | None = None) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write((text if text is not None else _plain(data)) + "\n")


def _plain(data: Any) -> str:
    if isinstance(data, list):
        return "\n".join(_plain(item) for item in data) or "(none)"
    if isinstance(data, dict):
        return "  ".join(f"{k}={_scalar(v)}" for k, v in data.items())
    return str(data)


def _scalar(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def fail(message: str, code: int = 1) -> None:
    sys.stderr.write(f"vault-admin: {message}\n")
    raise SystemExit(code)

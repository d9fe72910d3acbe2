"""Tests only (`tests/test_render_id_unique.py`): a vaultd started with this directory first on
PYTHONPATH draws its render ids from `SCRIPTED_RENDER_IDS` (comma-separated hex, in order; then
random again), so a test can make two page views draw the same id. Python imports
`sitecustomize` before vaultd, so `vaultd.services.pages.page_path` imports the scripted function.
Never on a deployment's path: production has no switch."""

from __future__ import annotations

import os

from render.forensic_wire import trace_codes

_scripted = [int(value, 16) for value in os.environ.get("SCRIPTED_RENDER_IDS", "").split(",")
             if value]
_random = trace_codes.new_render_id


def _next_render_id() -> int:
    return _scripted.pop(0) if _scripted else _random()


trace_codes.new_render_id = _next_render_id

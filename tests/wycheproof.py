"""Wycheproof vectors, carried in tests/vectors/wycheproof (Apache-2.0, LICENSE beside them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

VECTORS_DIR = Path(__file__).resolve().parent / "vectors" / "wycheproof"


def vector_params(filename: str, algorithm: str,
                  group_filter: Callable[[dict[str, Any]], bool]) -> list[Any]:
    """One pytest param per test of the matching groups; a missing file is one failing case
    (not a skip), so missing vectors are noticed."""
    path = VECTORS_DIR / filename
    if not path.is_file():
        return [pytest.param({"missing": str(path)}, id="vectors-missing")]
    data = json.loads(path.read_text())
    assert data["algorithm"] == algorithm
    params = [pytest.param(test, id=f"tc{test['tcId']:02d}")
              for group in data["testGroups"] if group_filter(group)
              for test in group["tests"]]
    assert params, f"no usable vectors in {filename}"
    return params

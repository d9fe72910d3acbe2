"""What a marker expression selects: `pytest --collect-only` in a fresh process over given
modules, for the tests of the suite's selections (the fast loop, the tiers)."""

from __future__ import annotations

import subprocess
import sys

from tests.vault_process import base_env
from tests.zygote_base import ROOT


def collected_modules(marks: str, *modules: str) -> list[str]:
    """The modules of `modules` that `-m marks` collects, in collection order."""
    env = {name: value for name, value in base_env({}).items() if not name.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", marks, *modules],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    found: list[str] = []
    for line in run.stdout.splitlines():
        module = line.split("::")[0]
        if "::" in line and module not in found:
            found.append(module)
    return found

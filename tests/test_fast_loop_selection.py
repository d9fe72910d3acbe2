"""The fast loop's selection (`-m "not slow"`, docs/testing.md "Markers"): a `forensic` module's
tests count as slow, so the fast loop collects none of them and `-m forensic` collects them
alone; the rest of the fast loop is left as it was."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.vault_process import base_env
from tests.zygote_base import ROOT

FORENSIC = "tests/test_forensic_codes.py"  # marked forensic, and nothing else
PLAIN = "tests/test_keyring.py"  # in the fast loop

pytestmark = pytest.mark.slow  # a pytest collection per selection: seconds each


def collected(marks: str) -> set[str]:
    env = {name: value for name, value in base_env({}).items() if not name.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", marks, FORENSIC, PLAIN],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return {line.split("::")[0] for line in run.stdout.splitlines() if "::" in line}


def test_the_fast_loop_leaves_the_forensic_modules_to_the_whole_suite() -> None:
    assert collected("not slow") == {PLAIN}
    assert collected("forensic and slow") == {FORENSIC}  # alone, and in the whole suite

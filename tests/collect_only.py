"""What marker expressions select: `pytest --collect-only` over given modules, once per
expression, all in one fresh process (the suite's imports paid once, not once a selection),
for the tests of the suite's selections (the fast loop, the tiers).

`python -m tests.collect_only '<json: {"selections": [...], "modules": [...], "what": ...}>'`
prints `{selection: [...]}`, each list in collection order: with `"what": "modules"`, the
modules of the selected tests; `"ids"`, the selected tests' node ids; `"files"`, every module
collected (imported), selected or not."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.vault_process import base_env
from tests.zygote_base import ROOT


def collected_modules(selections: list[str], *modules: str) -> dict[str, list[str]]:
    """For each marker expression of `selections`, the modules of `modules` it collects, in
    collection order."""
    return _collected(selections, list(modules), "modules")


def collected_ids(marks: str, *modules: str) -> list[str]:
    """The node ids (what pytest-xdist hands out) of the tests `marks` collects in `modules`."""
    return _collected([marks], list(modules), "ids")[marks]


def imported_files(marks: str, *modules: str) -> list[str]:
    """The test modules a run under `-m marks` collects (imports), selected or not."""
    return _collected([marks], list(modules), "files")[marks]


def _collected(selections: list[str], modules: list[str], what: str) -> dict[str, list[str]]:
    env = {name: value for name, value in base_env({}).items() if not name.startswith("PYTEST_")}
    asked = json.dumps({"selections": selections, "modules": modules, "what": what})
    run = subprocess.run([sys.executable, "-m", "tests.collect_only", asked], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    found: dict[str, list[str]] = json.loads(run.stdout.splitlines()[-1])
    return found


class _Collected:
    """A plugin keeping the modules of what the session selected, in its order."""

    def __init__(self) -> None:
        self.modules: list[str] = []
        self.ids: list[str] = []
        self.files: list[str] = []

    def pytest_collectreport(self, report: Any) -> None:
        if report.nodeid.endswith(".py"):
            self.files.append(report.nodeid)

    def pytest_collection_finish(self, session: Any) -> None:
        self.ids = [item.nodeid for item in session.items]
        for item in session.items:
            module = item.nodeid.split("::")[0]
            if module not in self.modules:
                self.modules.append(module)


def _main() -> None:
    import pytest

    asked = json.loads(sys.argv[1])
    found: dict[str, list[str]] = {}
    for marks in asked["selections"]:
        collected = _Collected()
        status = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-m", marks,
                              *asked["modules"]], plugins=[collected])
        if status not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            raise SystemExit(f"collection under -m {marks!r} failed: {status}")
        found[marks] = getattr(collected, asked["what"])
    print(json.dumps(found))


if __name__ == "__main__":
    _main()

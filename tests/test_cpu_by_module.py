"""`tests.cpu_by_module`: a pytest session run with the plugin records each module's CPU once,
from its first set-up to its last teardown (a module fixture's work included), with what its
children used, and the report ranks the modules by it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cpu_by_module import report
from tests.vault_process import base_env
from tests.zygote_base import ROOT

BURN = """
import subprocess, sys, time

import pytest


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@pytest.fixture(scope="module")
def warmed():
    yield
    burn(0.4)  # in the module's teardown


def test_in_the_test_process(warmed):
    burn(0.4)


def test_in_a_child(warmed):
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.6\\n"
                    "while time.process_time() < end: pass"], check=True)
"""

IDLE = """
def test_nothing_much():
    assert sum(range(10)) == 45
"""


def test_each_module_is_recorded_once_with_its_childrens_cpu(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_burn.py").write_text(BURN)
    (tmp_path / "test_idle.py").write_text(IDLE)
    recording = tmp_path / "cpu.jsonl"
    # A session of its own, not this worker's (whose name it would record).
    env = {name: value for name, value in base_env({}).items() if not name.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # its plugin alone: a quicker start
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tests.cpu_by_module", f"--cpu-by-module={recording}", "-c",
         str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
         str(tmp_path / "test_burn.py"), str(tmp_path / "test_idle.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [json.loads(line) for line in recording.read_text().splitlines()]
    assert [row["module"].rpartition("/")[2] for row in rows] == ["test_burn.py", "test_idle.py"]
    burned, idle = rows
    # 0.4 s in a test, 0.4 s in the module's teardown, 0.6 s in a child it waited for.
    assert burned["user"] + burned["system"] >= 1.3, burned
    assert idle["user"] + idle["system"] < 0.5, idle
    assert burned["worker"] == idle["worker"] == "main"
    lines = report(recording).splitlines()
    assert lines[1].endswith("test_burn.py") and lines[2].endswith("test_idle.py")
    assert lines[-1].endswith("all 2 modules")

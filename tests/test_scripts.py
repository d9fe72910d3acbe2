"""scripts/run.sh installs only when something it installs from changed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.vault_process import ROOT, base_env

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

STAMPED = ["pyproject.toml", "setup.py", "render/kernels/_blend.c", "render/kernels/_paper.c",
           "render/kernels/_chipmask.h", "scripts/setup.sh"]


def stamp_of(root: Path) -> str:
    result = subprocess.run(["bash", str(root / "scripts" / "stamp.sh")], capture_output=True,
                            text=True, check=True)
    return result.stdout.strip()


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, env=base_env(), capture_output=True, text=True,
                          timeout=300)


def test_run_sh_with_nothing_changed_starts_vaultd_without_installing() -> None:
    stamp = ROOT / ".venv" / ".setup-stamp"
    # scripts/test.sh ran scripts/setup.sh before the tests, which leaves this stamp.
    assert stamp.read_text().strip() == stamp_of(ROOT)
    written = stamp.stat().st_mtime_ns
    direct = run([str(ROOT / ".venv" / "bin" / "vaultd"), "--version"])
    through = run(["bash", "scripts/run.sh", "--version"])
    assert through.stdout == direct.stdout and through.stdout.startswith("vaultd ")
    assert through.stderr == ""  # no pip, no apt
    # setup.sh did not run (it rewrites the stamp); no timing: a loaded CI machine is slow.
    assert stamp.stat().st_mtime_ns == written


@pytest.mark.parametrize("changed", STAMPED)
def test_the_stamp_changes_with_every_file_an_install_depends_on(tmp_path: Path,
                                                                 changed: str) -> None:
    for name in [*STAMPED, "scripts/stamp.sh"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    before = stamp_of(tmp_path)
    assert before == stamp_of(ROOT)
    with open(tmp_path / changed, "a") as f:
        f.write("\n")
    assert stamp_of(tmp_path) != before

"""scripts/setup.sh (and so scripts/run.sh) waits for apt's lock when another process holds it,
rather than stopping at once (`scripts/apt-get-wait.sh`). A real `apt-get update` against package
lists of its own directory, whose lock another process holds with the same kind of lock apt
takes (fcntl), then lets go."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.vault_process import ROOT

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get")

HOLD = ("import fcntl, sys\n"
        "lock = open(sys.argv[1], 'w')\n"
        "fcntl.lockf(lock, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n")


def _private_lists(tmp_path: Path) -> list[str]:
    """apt-get options for package lists (and their lock) in `tmp_path`, from no source."""
    (tmp_path / "lists" / "partial").mkdir(parents=True)
    (tmp_path / "sources.list").write_text("")
    (tmp_path / "sources.list.d").mkdir()
    return ["-o", f"Dir::State::Lists={tmp_path / 'lists'}",
            "-o", f"Dir::Etc::SourceList={tmp_path / 'sources.list'}",
            "-o", f"Dir::Etc::SourceParts={tmp_path / 'sources.list.d'}"]


def test_apt_get_update_waits_for_the_lock_another_process_holds(tmp_path: Path) -> None:
    options = _private_lists(tmp_path)
    lock = tmp_path / "lists" / "lock"
    with subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        # apt-get alone stops at once: the lock is real.
        plain = subprocess.run(["apt-get", *options, "update"], capture_output=True, text=True,
                               timeout=60, check=False)
        assert plain.returncode != 0 and "Could not get lock" in plain.stderr
        with subprocess.Popen(["bash", "scripts/apt-get-wait.sh", *options, "update"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) as waiting:
            assert waiting.stderr is not None
            said = waiting.stderr.readline()
            assert f"Could not get lock {lock}" in said and "waiting for it" in said, said
            assert waiting.poll() is None  # still waiting, not failed
            holder.stdin.close()  # the other process lets go of the lock
            assert holder.wait(timeout=30) == 0
            assert waiting.wait(timeout=120) == 0, waiting.stderr.read()

"""`tests.admin_zygote`: a vault-admin command forked from the zygote answers exactly as
`python -m admin_cli.main` does (stdout, stderr, exit status, usage lines), each command is a
process of its own (its environment and working directory reach no other command), commands run
at once, and the zygote does not outlive the test process that started it, even a killed one."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.admin_zygote import ROOT, run_admin
from tests.processes import running
from tests.vault_process import base_env
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # runs vault-admin as fresh interpreters to compare


def _as_process(args: list[str], env: dict[str, str], cwd: Path
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "admin_cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.parametrize("args", [
    ["--version"],
    ["no-such-command"],  # a usage error: exit 2, the program named as `python -m` names it
    ["accounts", "list"],  # a refusal of the CLI's own: no vault in the data directory
    ["--json", "keys", "create"],  # a missing argument
])
def test_a_forked_command_answers_as_a_fresh_interpreter_does(args: list[str],
                                                              tmp_path: Path) -> None:
    env = base_env({"VAULTD_DATA_DIR": str(tmp_path / "nothing-here")})
    forked, fresh = run_admin(args, env, ROOT, timeout=120), _as_process(args, env, ROOT)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr)
    assert forked.stdout or forked.stderr  # it said something: the comparison compares output


def test_each_command_has_its_own_environment_and_working_directory(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    # A relative data directory is read from the command's working directory and environment.
    one = run_admin(["accounts", "list"], base_env({"VAULTD_DATA_DIR": "store-one"}), first,
                    timeout=120)
    two = run_admin(["accounts", "list"], base_env({}), second, timeout=120)
    assert one.returncode == two.returncode == 1
    assert str(first.resolve() / "store-one") in one.stderr, one.stderr
    assert "store-one" not in two.stderr and str(first) not in two.stderr, two.stderr
    assert str(second.resolve()) in two.stderr, two.stderr


def test_commands_run_at_once(tmp_path: Path) -> None:
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    def run(n: int) -> None:
        env = base_env({"VAULTD_DATA_DIR": str(tmp_path / f"vault-{n}")})
        results[n] = run_admin(["accounts", "list"], env, ROOT, timeout=120)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    assert sorted(results) == [0, 1, 2, 3]
    for n, result in results.items():
        assert result.returncode == 1 and f"vault-{n}" in result.stderr, result.stderr


KILLED_OWNER = """
import os, signal, sys
from tests.admin_zygote import _ZYGOTE, run_admin
from tests.vault_process import base_env
assert run_admin(["--version"], base_env({}), _ROOT, timeout=120).returncode == 0
assert _ZYGOTE._process is not None
print(_ZYGOTE._process.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
""".replace("_ROOT", repr(str(ROOT)))


def test_the_zygote_ends_with_the_process_that_started_it_even_killed() -> None:
    owner = subprocess.run([sys.executable, "-c", KILLED_OWNER], cwd=ROOT,
                           env=base_env({}), capture_output=True, text=True, timeout=120)
    assert owner.returncode == -signal.SIGKILL, owner.stderr
    zygote = int(owner.stdout.strip())
    wait_until(lambda: not running(zygote), timeout=30, what="the orphaned zygote exited")

"""`tests.vaultd_zygote`: a vaultd forked from the zygote is the process a fresh `python -m`
would be where the tests look (its pid, process group and session, arguments, environment,
working directory, descriptors, signal dispositions, limits; its exit status on SIGTERM and
SIGKILL, its refusals and its log), its database child dies with it and the data directory is
free again; a start that changes what the zygote read at import runs fresh; the zygote refuses
to serve with a thread, an event loop or an open descriptor in it, and does not outlive the
test process that started it, even a killed one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.processes import database_process, parent_of, running
from tests.vault_process import ROOT, VaultProcess, base_env, run_vaultd, vault_env
from tests.vaultd_probe import REPORT
from tests.vaultd_zygote import _ZYGOTE, ForkedVaultd, start_vaultd
from tests.waiting import wait_until
from tests.worker_database import WORKER_DATABASE

pytestmark = pytest.mark.slow  # starts vaultd processes, forked and fresh, to compare

DIFFERS_BY_NATURE = {"pid", "ppid", "authkey", "random"}  # drawn anew in each process


def probed(data_dir: Path) -> VaultProcess:
    return VaultProcess(data_dir, env=vault_env(data_dir, {"VAULTD_RENDER_WORKERS": "1"}, False),
                        entry_module="tests.vaultd_probe")


def probe_report(server: VaultProcess) -> dict[str, object]:
    line = next(line for line in server.log_text().splitlines() if line.startswith(REPORT))
    report: dict[str, object] = json.loads(line.removeprefix(REPORT))
    return report


def test_a_forked_vaultd_is_what_a_fresh_one_is(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    forked, again, fresh = (probed(tmp_path / name) for name in ("forked", "again", "fresh"))
    forked.start()
    again.start()
    with monkeypatch.context() as off:
        off.setenv("VAULTD_ZYGOTE", "off")  # not in vaultd's environment: base_env drops it
        fresh.start()
    try:
        assert isinstance(forked.process, ForkedVaultd) and isinstance(again.process,
                                                                       ForkedVaultd)
        assert isinstance(fresh.process, subprocess.Popen)
        reports = [probe_report(server) for server in (forked, again, fresh)]
        for server, report in zip((forked, again, fresh), reports, strict=True):
            assert server.process is not None and report["pid"] == server.process.pid
            assert report["env"] == base_env(server.env)
            assert report["open"] == []  # nothing of the zygote's, nor of the test's
        for report in reports[:2]:
            assert report["ppid"] != os.getpid()  # the zygote's child, in the test's group
        assert reports[2]["ppid"] == os.getpid()
        same = [{key: value for key, value in report.items()
                 if key not in DIFFERS_BY_NATURE | {"env", "argv", "orig_argv", "stdio"}}
                for report in reports]
        assert same[0] == same[1] == same[2]
        assert reports[0]["pgid"] == os.getpgid(0) and reports[0]["sid"] == os.getsid(0)
        for report, server in zip(reports, (forked, again, fresh), strict=True):
            assert report["orig_argv"] == [sys.executable, "-m", "tests.vaultd_probe",
                                           "--host", "127.0.0.1", "--port", str(server.port),
                                           "--data-dir", str(server.data_dir)]
            assert report["argv"] == [str(ROOT / "tests" / "vaultd_probe.py"),
                                      *report["orig_argv"][3:]]
            log, stdin = os.stat(server.log_path), os.fstat(0)
            assert report["stdio"] == [[stdin.st_dev, stdin.st_ino],
                                       [log.st_dev, log.st_ino], [log.st_dev, log.st_ino]]
        # Two forks of one zygote draw their own randomness, as two fresh processes would.
        assert reports[0]["random"] != reports[1]["random"]
        assert reports[0]["authkey"] != reports[1]["authkey"]
        assert forked.stop(signal.SIGTERM) == fresh.stop(signal.SIGTERM) == 0
        assert again.stop(signal.SIGKILL) == -signal.SIGKILL
        for server in (forked, fresh):
            text = server.log_text()
            assert "vaultd stopping" in text and text.rstrip().endswith("vaultd stopped"), text
        for server in (forked, again, fresh):  # nothing of the fork's own said (a warning)
            assert not [line for line in server.log_text().splitlines()
                        if "Warning" in line or "Traceback" in line], server.log_text()
    finally:
        for server in (forked, again, fresh):
            server.stop()
            WORKER_DATABASE.release(server.env)


def test_a_killed_forked_vaultd_takes_its_database_along_and_frees_its_directory(
        tmp_path: Path) -> None:
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    try:
        assert isinstance(server.process, ForkedVaultd)
        _, key = server.new_account()
        database = database_process(server.process.pid)
        assert database is not None and parent_of(database) == server.process.pid
        server.process.kill()
        assert server.process.wait(30) == -signal.SIGKILL
        assert server.process.poll() == -signal.SIGKILL
        wait_until(lambda: not running(database), timeout=30, what="its database gone with it")
        server.process.kill()  # a signal after its end reaches nobody, as Popen's
        server.start()
        assert isinstance(server.process, ForkedVaultd)
        with server.client(key) as api:
            assert api.get("/files").status_code == 200
    finally:
        server.stop()
    assert "Traceback" not in server.log_text()


@pytest.mark.parametrize("args", [
    ["--version"],
    ["--port", "not-a-port"],  # a usage error: exit 2, the program named as `python -m` names it
    ["--data-dir", "/proc/version"],  # a refusal of vaultd's own
])
def test_a_forked_run_answers_as_a_fresh_one(args: list[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    forked = run_vaultd(args, {"VAULTD_RENDER_WORKERS": "1"})
    monkeypatch.setenv("VAULTD_ZYGOTE", "off")
    fresh = run_vaultd(args, {"VAULTD_RENDER_WORKERS": "1"})
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr)
    assert fresh.returncode in (0, 2) and (fresh.stdout or fresh.stderr)


def started(env: dict[str, str], tmp_path: Path) -> object:
    with open(tmp_path / "out", "wb") as out:
        process = start_vaultd("vaultd.main", ["--version"], env, ROOT, out.fileno(),
                               out.fileno())
    assert process.wait(120) == 0
    return process


def test_a_start_that_changes_what_the_zygote_read_at_import_runs_fresh(
        tmp_path: Path) -> None:
    assert isinstance(started(base_env({"VAULTD_LOG_LEVEL": "debug"}), tmp_path), ForkedVaultd)
    # vaultd's settings are read when it starts, never at import: all of them may be forked.
    assert not [name for name in _ZYGOTE.reads if name.startswith("VAULTD_")]
    assert "HOME" in _ZYGOTE.reads  # read at import, so a start must not change it
    # One module copies the whole environment at import; a fork copies it again as it starts.
    assert _ZYGOTE.copiers == {"wsgiref.handlers"}
    for changed in ({"HOME": str(tmp_path)}, {"PYTHONHASHSEED": "1"}, {"TZ": "Asia/Tokyo"},
                    {"OPENBLAS_NUM_THREADS": "1"}):
        assert isinstance(started(base_env(changed), tmp_path), subprocess.Popen), changed


HAZARDS = """
import asyncio, json, os, threading
stop = threading.Event()
threading.Thread(target=stop.wait, name="left-running", daemon=True).start()
loop = asyncio.new_event_loop()
kept = open(os.devnull)
from tests.vaultd_zygote_server import fork_hazards
print(json.dumps(fork_hazards({0, 1, 2})))
"""


def test_the_fork_check_names_threads_loops_and_open_files() -> None:
    result = subprocess.run([sys.executable, "-c", HAZARDS], cwd=ROOT, env=base_env({}),
                            capture_output=True, text=True, timeout=120, check=True)
    hazards = json.loads(result.stdout)
    assert "thread left-running" in hazards
    assert "a _UnixSelectorEventLoop" in hazards
    assert any(hazard.endswith("(/dev/null)") for hazard in hazards), hazards
    assert any("socket:" in hazard for hazard in hazards), hazards  # the loop's self-pipe


KILLED_OWNER = """
import os, signal
from tests.vault_process import run_vaultd
from tests.vaultd_zygote import _ZYGOTE
assert run_vaultd(["--version"], {}).returncode == 0
assert _ZYGOTE._process is not None
print(_ZYGOTE._process.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_zygote_ends_with_the_process_that_started_it_even_killed() -> None:
    owner = subprocess.run([sys.executable, "-c", KILLED_OWNER], cwd=ROOT, env=base_env({}),
                           capture_output=True, text=True, timeout=120)
    assert owner.returncode == -signal.SIGKILL, owner.stderr
    zygote = int(owner.stdout.strip())
    wait_until(lambda: not running(zygote), timeout=30, what="the orphaned zygote exited")


def test_forks_at_once_are_processes_apart(tmp_path: Path) -> None:
    outcomes: dict[int, int] = {}

    def refused(n: int) -> None:  # a setting of its own, in its own output
        env = base_env({"VAULTD_RENDER_WORKERS": f"{n} workers"})
        with open(tmp_path / f"{n}.out", "wb") as out:
            process = start_vaultd("vaultd.main", [], env, ROOT, out.fileno(), out.fileno())
        outcomes[n] = process.wait(120)

    threads = [threading.Thread(target=refused, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    assert outcomes == {0: 2, 1: 2, 2: 2, 3: 2}
    for n in range(4):
        said = (tmp_path / f"{n}.out").read_text()
        assert said.startswith("vaultd: ") and f"{n} workers" in said, said

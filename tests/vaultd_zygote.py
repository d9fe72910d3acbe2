"""vaultd processes for tests, each forked from a zygote that has already imported vaultd.

A vaultd process spends its first seconds importing (Tornado, pymongo, numpy, the render
pool's modules: `import vaultd.main` 4 to 7 s at a load average of 9 to 14), and the suite
starts about 60 of them where a real process is the point (crash, signal, restart, sandbox and
multi-process tests). `start_vaultd` starts one as `python -m <module> *args` would: a process
of its own (its own pid, in the test process's session and process group as a `Popen` child
is), with the start's arguments, environment, working directory, umask, resource limits, stdin
and output files, running `runpy` on the module as `-m` does, so it exits, is signalled and is
killed as a fresh one, and its exit status is the one the zygote reaps. The zygote is one
process per test process that imported `vaultd.main` once, runs nothing itself and forks a
child per start; it exits when its test process does (its stdin is a pipe from it). What
it shares with the vault-admin zygote (its start, its socket, a request's framing) is
`tests.zygote_base`.

What a fork shares with the zygote and a fresh process would not:
- **What was read at import.** The zygote imports with the test process's environment less
  its `VAULTD_*` settings (what `tests.vault_process.base_env` gives every start) and records
  each variable its imports read through `os.environ`. A start whose environment differs from
  that in a variable read then, or in one the interpreter or a native library reads as it
  starts (`STARTUP_NAMES`), runs in a fresh interpreter, as does a start whose resource limits
  the zygote could not give. vaultd reads its settings when it starts, not at import (none of
  its `VAULTD_*` names is among the reads: `tests/test_vaultd_zygote.py`). One module copies
  the whole environment at import (`wsgiref.handlers`, for a WSGI request's environ): a child
  copies it again from its own. The module a start runs is run afresh (`vaultd.main` is
  dropped from the child's modules first, as `-m` finds it not imported), on the modules it
  imported.
- **Threads and open things.** A fork copies only the thread that forks, so nothing that owns
  a thread, a lock held by one, a socket or a database client may exist in the zygote:
  `tests.vaultd_zygote_server.fork_hazards` checks it before the zygote serves, and a zygote
  with a hazard is refused.
  OpenBLAS (numpy) starts a thread pool at import and stops it before every fork
  (`pthread_atfork`); a child starts its own at its first matrix product, as a fresh process
  does at import.
- **Randomness.** `random` reseeds in each child (its fork hook) and multiprocessing's authkey
  is drawn anew; `hash()`'s seed is the zygote's.

`VAULTD_ZYGOTE=off` in the tests' environment starts every vaultd fresh (to compare); so does
a machine without fork or pidfds.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Protocol

from tests.zygote_base import ZygoteProcess, output_text, send_request

# Read by the interpreter, the C library or a native library as a process starts or loads
# one: a start that sets one differently from the zygote's runs fresh.
STARTUP_NAMES = ("PYTHON", "LC_", "LANG", "TZ", "LD_", "GLIBC_", "MALLOC_", "OPENBLAS_",
                 "OMP_", "GOTO", "MKL_")
LIMITS = [name for name in dir(resource) if name.startswith("RLIMIT_")]


class VaultdProcess(Protocol):
    """What the tests use of a vaultd process: a `subprocess.Popen` or a `ForkedVaultd`."""

    pid: int

    @property
    def returncode(self) -> int | None: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def start_vaultd(module: str, args: list[str], env: dict[str, str], cwd: Path, stdout: int,
                 stderr: int) -> VaultdProcess:
    """`python -m <module> *args` with exactly `env`, in `cwd`, writing to `stdout`/`stderr`."""
    zygote = _ZYGOTE.serving(env)
    if zygote is None:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                                stdout=stdout, stderr=stderr)
    return zygote.fork(module, args, env, cwd, stdout, stderr)


def run_vaultd_to_end(module: str, args: list[str], env: dict[str, str], cwd: Path,
                      timeout: float) -> subprocess.CompletedProcess[str]:
    """As `subprocess.run(..., capture_output=True, text=True, timeout=timeout)`."""
    cmd = [sys.executable, "-m", module, *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = start_vaultd(module, args, env, cwd, out.fileno(), err.fileno())
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        return subprocess.CompletedProcess(cmd, code, output_text(out), output_text(err))


class ForkedVaultd:
    """A vaultd the zygote forked: a `Popen`'s `pid`, `returncode`, `poll`, `wait`,
    `send_signal`, `terminate` and `kill`. Signals go through a pidfd, so none reaches
    another process that took its pid; the exit status is the zygote's `waitpid`."""

    def __init__(self, args: list[str], pid: int, pidfd: int, conn: int) -> None:
        self.args, self.pid, self.returncode = args, pid, None
        self._pidfd, self._conn = pidfd, conn  # raw descriptors: closed with the status
        self._answer = b""

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        while self.returncode is None:
            if not select.select([self._conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._read_status()
        return self.returncode

    def _read_status(self) -> None:
        chunk = os.read(self._conn, 64)
        if not chunk:
            raise RuntimeError(f"the vaultd zygote ended before vaultd (pid {self.pid}) did")
        self._answer += chunk
        if self._answer.endswith(b"\n"):
            self.returncode = int(self._answer)
            os.close(self._conn)
            os.close(self._pidfd)

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # just exited: as Popen's
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _limits() -> dict[str, tuple[int, int]]:
    return {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS}


def _within(limit: int, bound: int) -> bool:
    infinite = resource.RLIM_INFINITY
    return bound == infinite or (limit != infinite and limit <= bound)


def _umask() -> int:
    # Read, not set and set back: another thread (an in-process vaultd) may create files.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise LookupError("no Umask in /proc/self/status")


class _Zygote(ZygoteProcess):
    """The zygote of this test process, started at its first vaultd."""

    server_module = "tests.vaultd_zygote_server"
    switch = "VAULTD_ZYGOTE"

    def __init__(self) -> None:
        super().__init__()
        self.reads: frozenset[str] = frozenset()  # what its imports read of `env` by name
        self.copiers: frozenset[str] = frozenset()  # the modules that copied all of it
        self._limits: dict[str, tuple[int, int]] = {}

    def supported(self) -> bool:
        return hasattr(os, "pidfd_open") and hasattr(os, "fork")

    def forkable(self, env: dict[str, str]) -> bool:
        changed = {name for name in env.keys() | self.env.keys()
                   if env.get(name) != self.env.get(name)}
        if any(name in self.reads or name.startswith(STARTUP_NAMES) for name in changed):
            return False
        # A hard limit raised since the zygote started is one its child could not take.
        return all(_within(hard, self._limits[name][1]) for name, (_, hard) in _limits().items())

    def _start(self) -> None:
        self._limits = _limits()  # the zygote's, which its children can lower, never raise
        super()._start()

    def started(self, line: bytes) -> None:
        try:
            ready = json.loads(line)
        except ValueError:
            ready = {"hazards": [f"it said {line!r}"]}
        if ready["hazards"]:
            raise RuntimeError(f"the vaultd zygote is not safe to fork from: {ready['hazards']} "
                               "(VAULTD_ZYGOTE=off starts every vaultd fresh)")
        self.reads = frozenset(ready["reads"])
        self.copiers = frozenset(ready["copiers"])

    def fork(self, module: str, args: list[str], env: dict[str, str], cwd: Path, stdout: int,
             stderr: int) -> ForkedVaultd:
        request = {"module": module, "args": args, "env": env, "cwd": str(cwd),
                   "umask": _umask(), "limits": _limits()}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.socket)
            send_request(conn, request, [0, stdout, stderr])
            line, fds, _, _ = socket.recv_fds(conn, 64, 1)
        except BaseException:
            conn.close()
            raise
        if not line.endswith(b"\n") or len(fds) != 1:
            conn.close()
            raise RuntimeError(f"the vaultd zygote did not fork: {line!r}")
        return ForkedVaultd([sys.executable, "-m", module, *args], int(line), fds[0],
                            conn.detach())


_ZYGOTE = _Zygote()

"""vault-admin commands for tests, each a process of its own, forked from one that has already
imported the CLI.

A `vault-admin` process spends most of its life importing (admin_cli, vaultd, pymongo, numpy
for the mark key): about 0.7 s of CPU, 1 to 3 s on a quiet 2-core machine and 10 to 15 s at a
load average of 12 to 14, paid again by every command a test runs. `run_admin` runs a command
as `python -m admin_cli.main` would (a process of its own, with the command's arguments,
environment, working directory, stdout, stderr and exit status) in a child forked from a
zygote: one process per test process that imports `admin_cli.main` once and then forks a child
per command, which starts at `admin_cli.main.main()`. The zygote runs no command itself, so
what a command changes (its settings, the database it opens or starts, the umask, the CLI's
state) ends with its child. Commands may run at once: the zygote forks on each connection.
What it shares with vaultd's zygote (its start, its socket, a request's framing) is
`tests.zygote_base`.

A command whose environment sets a `PYTHON*` variable differently from the zygote's (a
PYTHONPATH with a plugin's distribution, whose entry points are read at start) runs in a fresh
interpreter, as it would without the zygote; so does every command where fork is not there,
and every command when the environment of the tests sets ADMIN_ZYGOTE=off (to compare).
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import BinaryIO

from tests.zygote_base import ROOT as ROOT  # where the commands run: tests import it from here
from tests.zygote_base import (
    ZygoteProcess,
    listening,
    output_text,
    receive_request,
    remove_socket_folder,
    send_request,
)


def run_admin(args: list[str], env: dict[str, str], cwd: Path,
              timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m admin_cli.main *args` with exactly `env`, in `cwd`; any exit status."""
    cmd = [sys.executable, "-m", "admin_cli.main", *args]
    zygote = _ZYGOTE.serving(env)
    if zygote is None:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              check=False, timeout=timeout)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = zygote.run(args, env, cwd, out, err, cmd, timeout)
        return subprocess.CompletedProcess(cmd, code, output_text(out), output_text(err))


def _python_settings(env: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith("PYTHON")}


class _Zygote(ZygoteProcess):
    """The zygote of this test process, started at its first command."""

    server_module = "tests.admin_zygote"
    switch = "ADMIN_ZYGOTE"

    def forkable(self, env: dict[str, str]) -> bool:
        return _python_settings(env) == _python_settings(self.env)

    def started(self, line: bytes) -> None:
        if line != b"ready\n":
            raise RuntimeError(f"the vault-admin zygote did not start: {line!r}")

    def run(self, args: list[str], env: dict[str, str], cwd: Path, out: BinaryIO,
            err: BinaryIO, cmd: list[str], timeout: float) -> int:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(self.socket)
            send_request(conn, {"args": args, "env": env, "cwd": str(cwd)},
                         [out.fileno(), err.fileno()])
            answer = b""
            try:
                while answer.count(b"\n") < 2:
                    chunk = conn.recv(64)
                    if not chunk:
                        break
                    answer += chunk
            except TimeoutError:
                pid = answer.split(b"\n")[0]
                if pid.isdigit():
                    os.kill(int(pid), signal.SIGKILL)
                raise subprocess.TimeoutExpired(cmd, timeout, output_text(out),
                                               output_text(err)) from None
        lines = answer.split(b"\n")
        if len(lines) < 3 or not lines[1].lstrip(b"-").isdigit():
            # Killed before it could say (a signal, a crash): as a process killed by SIGKILL.
            return -signal.SIGKILL
        return int(lines[1])


_ZYGOTE = _Zygote()


# --- the zygote's side ----------------------------------------------------------------------


def _serve(path: str) -> None:
    import admin_cli.main  # noqa: F401 - the imports every command would make again

    listener = listening(path)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # commands reaped as they end
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in readable:  # the test process is gone, or done
            remove_socket_folder(path)
            return
        conn, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _command(conn)  # never returns
        conn.close()


def _command(conn: socket.socket) -> None:
    """In the forked child: become the command and run it, then report its exit status."""
    code = 1
    try:
        request, fds = receive_request(conn, 2)
        conn.sendall(f"{os.getpid()}\n".encode())
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.close(stdin)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        code = _main(request["args"])
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(f"{code}\n".encode())
        finally:
            os._exit(code)


def _main(args: list[str]) -> int:
    """`admin_cli.main.main()` as `python -m admin_cli.main` runs it: the same argv and the
    same program name in its usage lines."""
    import admin_cli.main

    sys.argv = [admin_cli.main.__file__, *args]
    sys.modules["__main__"].__package__ = "admin_cli"
    try:
        admin_cli.main.main()
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - reported as the interpreter would report it
        traceback.print_exc()
        return 1
    finally:
        atexit._run_exitfuncs()
    return 0


if __name__ == "__main__":
    _serve(sys.argv[1])

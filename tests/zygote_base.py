"""What the tests' two zygotes share (`tests.vaultd_zygote` for vaultd, `tests.admin_zygote` for
vault-admin): a server process per test process, started at its first use as `python -m
<server module> SOCKET`, which imports once what every process would import again and then forks
a child per request sent to it on a Unix socket.

- **The environment it imports with** is the test process's without its `VAULTD_*` settings (a
  master key among them: those are each start's), `PYTHONPATH` the checkout: what
  `tests.vault_process.base_env` gives every start.
- **Its end is the test process's.** Its stdin is a pipe from the test process: at that
  process's end (an xdist worker's, even a killed one) the zygote reads EOF and exits. A zygote
  found dead is started again at the next use.
- **A request** is its length (`HEADER`) sent with the descriptors the child takes over, then
  its JSON body.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO, Self

ROOT = Path(__file__).resolve().parents[1]
HEADER = struct.Struct("!I")  # a request's length, sent with the descriptors the child takes


def output_text(file: BinaryIO) -> str:
    """What a child wrote to `file` (a temporary file it was given as stdout or stderr)."""
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def send_request(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    body = json.dumps(request).encode()
    socket.send_fds(conn, [HEADER.pack(len(body))], fds)
    conn.sendall(body)


def receive_request(conn: socket.socket, fd_count: int) -> tuple[dict[str, Any], list[int]]:
    """The zygote's side of `send_request`: the request and the descriptors sent with it."""
    head, fds, _, _ = socket.recv_fds(conn, HEADER.size, fd_count)
    (size,) = HEADER.unpack(head)
    body = b""
    while len(body) < size:
        body += conn.recv(size - len(body))
    return json.loads(body), fds


def listening(path: str) -> socket.socket:
    """The zygote's socket, where the test process's requests arrive (several at once)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return listener


def remove_socket_folder(path: str) -> None:
    """The zygote's last act: the folder `ZygoteProcess` made for its socket, which its owner
    cannot remove when killed."""
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


class ZygoteProcess:
    """The test process's end of a zygote: started at its first use, started again when found
    dead, stopped at the test process's exit. A kind of zygote says when a start may be forked
    (`forkable`), reads the zygote's first line (`started`: raise when it is not ready) and
    may be switched off by the environment variable `switch` set to `off`."""

    server_module = ""
    switch = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None
        self.socket = ""
        self.env: dict[str, str] = {}

    def serving(self, env: dict[str, str]) -> Self | None:
        """This zygote when a start with `env` may be forked from it, started if need be."""
        if os.environ.get(self.switch) == "off" or not self.supported():
            return None
        with self._lock:
            if self._process is not None and self._process.poll() is not None:
                self._process = None  # it died: a new one
            if self._process is None:
                self._start()
            return self if self.forkable(env) else None

    def supported(self) -> bool:
        return hasattr(os, "fork")

    def forkable(self, env: dict[str, str]) -> bool:
        raise NotImplementedError

    def started(self, line: bytes) -> None:
        raise NotImplementedError

    def _start(self) -> None:
        self._folder = tempfile.mkdtemp(prefix=f"{self.server_module.rpartition('.')[2]}-")
        self.socket = os.path.join(self._folder, "socket")
        self.env = {name: value for name, value in os.environ.items()
                    if not name.startswith("VAULTD_")}
        self.env["PYTHONPATH"] = str(ROOT)
        self._process = subprocess.Popen(
            [sys.executable, "-m", self.server_module, self.socket], cwd=ROOT, env=self.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdout is not None
        try:
            self.started(self._process.stdout.readline())
        except BaseException:
            self._stop()
            raise
        atexit.register(self.stop)

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(10)
        self._process = None
        if self._folder is not None:  # its socket's folder, or every run leaves one in /tmp
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

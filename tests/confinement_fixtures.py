"""What the tests of confined processes share: the uid a container runs vaultd as, that uid kept
busy with threads elsewhere (as a serving vaultd's server and workers keep it), and the
listeners an escaping process would reach (a TCP port on loopback, a Unix socket in /run)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.office_attacks import SOCKET_IN_RUN
from tests.vault_process import ROOT, base_env

VAULTD_UID = 10001  # the Dockerfile's vaultd user


@contextmanager
def uid_running_threads(threads: int) -> Iterator[None]:
    """VAULTD_UID runs `threads` threads in a process of its own until the block ends."""
    with subprocess.Popen(
            [sys.executable, "-m", "tests.office_unprivileged", str(VAULTD_UID), "threads",
             str(threads)], cwd=ROOT, env=base_env(), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "ready\n"
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)


@contextmanager
def escape_listeners() -> Iterator[tuple[int, socket.socket]]:
    """A TCP port on loopback and a Unix socket at SOCKET_IN_RUN, both listening, for a
    confined process to try to reach (tests/office_attacks.py)."""
    tcp = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    if os.path.exists(SOCKET_IN_RUN):
        os.unlink(SOCKET_IN_RUN)
    unix.bind(SOCKET_IN_RUN)
    os.chmod(SOCKET_IN_RUN, 0o666)
    unix.listen()
    try:
        yield tcp.getsockname()[1], unix
    finally:
        tcp.close()
        unix.close()
        os.unlink(SOCKET_IN_RUN)

"""Run as `python -m tests.office_attacks JOB_DIR PORT`: confine this process exactly as the Office
converter is confined (render.sandbox.converter), then try what a LibreOffice taken over by a
document would try, and print one line per attempt: its name and "refused" or "ALLOWED"."""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys

from render.sandbox.converter import confine_converter

_libc = ctypes.CDLL(None, use_errno=True)
SOCKET_IN_RUN = "/run/vaultd-office-attack.sock"  # the test listens there, mode 0666


def _read(path: str) -> None:
    with open(path, "rb") as handle:
        handle.read(1)


def _write(path: str) -> None:
    with open(path, "wb") as handle:
        handle.write(b"x")


def _tcp(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        sock.connect(("127.0.0.1", port))


def _udp() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"x", ("127.0.0.1", 53))


def _unix(path: str) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)


def _call(result: int) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), "refused")


def attempts(job_dir: str, port: int) -> dict[str, object]:
    return {
        "read /etc/passwd": lambda: _read("/etc/passwd"),
        "read /etc/shadow": lambda: _read("/etc/shadow"),
        "read /proc/1/environ": lambda: _read("/proc/1/environ"),
        "read the test's own checkout": lambda: _read(os.path.abspath(__file__)),
        "write /var/tmp": lambda: _write("/var/tmp/vaultd-office-escape"),
        "write /dev/shm": lambda: _write("/dev/shm/vaultd-office-escape"),
        "tcp to a listener on 127.0.0.1": lambda: _tcp(port),
        "udp to 127.0.0.1": _udp,
        "unix socket in the host's /run": lambda: _unix(SOCKET_IN_RUN),
        "kill init": lambda: os.kill(1, 0),
        "setsid": lambda: _call(0 if _libc.setsid() >= 0 else -1),
        "ptrace attach to init": lambda: _call(_libc.ptrace(16, 1, 0, 0)),
        "unshare a user namespace": lambda: _call(_libc.unshare(0x10000000)),
        "exec /bin/cat /etc/passwd": lambda: subprocess.run(
            ["/bin/cat", "/etc/passwd"], check=True, capture_output=True),
    }


def main(job_dir: str, port: int) -> None:
    confine_converter(job_dir, 2 << 30, 60)
    _write(os.path.join(job_dir, "inside"))  # the job directory stays writable
    for name, attempt in attempts(job_dir, port).items():
        try:
            attempt()  # type: ignore[operator]
            verdict = "ALLOWED"
        except (OSError, subprocess.CalledProcessError):
            verdict = "refused"
        os.write(1, f"{name}: {verdict}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

"""What an exploited render worker would try, as plain functions shipped into a real confined
worker (`pool_helpers.task`). Each returns "refused: ..." or "ESCAPED: ..."; each imports what
it needs, since it is defined from its source text inside the worker."""

from __future__ import annotations


def read_file(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return f"ESCAPED: read {len(handle.read(64))} bytes of {path}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def list_dir(path: str) -> str:
    import os

    try:
        return f"ESCAPED: {len(os.listdir(path))} entries in {path}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def tcp_connect(port: int) -> str:
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(("127.0.0.1", port))
            return f"ESCAPED: connected to port {port}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def udp_send(host: str, port: int) -> str:
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"exfiltrated", (host, port))
            return f"ESCAPED: sent a datagram to {host}:{port}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def write_file(path: str) -> str:
    try:
        with open(path, "wb") as handle:
            handle.write(b"planted")
        return f"ESCAPED: wrote {path}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def run_program(path: str) -> str:
    import subprocess

    try:
        subprocess.run([path], check=False, timeout=5)
        return f"ESCAPED: ran {path}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def exec_program(path: str) -> str:
    import os

    try:
        os.execv(path, [path])
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"
    return "ESCAPED: unreachable"


def signal_process(pid: int) -> str:
    import os
    import signal

    try:
        os.kill(pid, signal.SIGCONT)  # harmless if it got through, but it must not
        return f"ESCAPED: signalled {pid}"
    except OSError as exc:
        return f"refused: {type(exc).__name__} {exc.errno}"


def secret_environment() -> str:
    import os

    names = [name for name in os.environ if name.startswith("VAULTD_")]
    return f"ESCAPED: {names}" if names else "refused: no VAULTD_* variable"


def cloud_credentials() -> str:
    import os

    names = [name for name in os.environ if name.startswith(("AWS_", "AZURE_"))]
    try:  # the AWS chain's other sources: a profile's files, an instance role's endpoint
        with open(os.path.expanduser("~/.aws/credentials")) as f:
            return f"ESCAPED: read ~/.aws/credentials ({len(f.read())} bytes)"
    except OSError:
        pass
    return f"ESCAPED: {names}" if names else "refused: no AWS_* or AZURE_* variable"


def new_namespace() -> str:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER: a way back to capabilities
        return "ESCAPED: unshare(CLONE_NEWUSER)"
    return f"refused: errno {ctypes.get_errno()}"


def send_frames(*frames: bytes) -> str:
    """Write raw bytes on every pipe this worker may write (its results pipe among them), as a
    compromised worker would answer the server; then wait to be killed."""
    import fcntl
    import os
    import stat
    import time

    for fd in range(3, 64):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                for data in frames:
                    os.write(fd, data)
        except OSError:
            continue
    time.sleep(30)
    return "not killed"


def device_ioctl() -> str:
    """TIOCSTI (push input into a terminal) on stderr: the filter must stop it before the
    kernel looks at the descriptor (EPERM, not ENOTTY)."""
    import errno
    import fcntl

    tiocsti = 0x5412  # termios.TIOCSTI (termios itself is not importable in a worker)
    try:
        fcntl.ioctl(2, tiocsti, b"x")
        return "ESCAPED: TIOCSTI went through"
    except OSError as exc:
        return "refused: EPERM" if exc.errno == errno.EPERM else f"reached the kernel: {exc}"

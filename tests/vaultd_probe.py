"""vaultd with a report first: run as vaultd's entry module (`VaultProcess.entry_module`), it
writes what a process is given at its start (arguments, environment, working directory,
descriptors, signal dispositions, limits, import path) to its output, then runs vaultd. The
test of `tests.vaultd_zygote` compares a forked vaultd's report with a fresh one's."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import resource
import signal
import sys
import threading
from pathlib import Path

from vaultd.main import main

REPORT = "zygote probe: "
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGHUP,
           signal.SIGUSR1, signal.SIGQUIT]


def _identity(fd: int) -> list[int]:
    status = os.fstat(fd)
    return [status.st_dev, status.st_ino]


def _open_beyond_stdio() -> list[str]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            found.append(f"{name} {os.readlink(f'/proc/self/fd/{name}')}")
        except OSError:
            continue  # the listing's own descriptor, closed
    return sorted(entry for entry in found if int(entry.split()[0]) > 2)


def report() -> dict[str, object]:
    status = Path("/proc/self/status").read_text()
    return {
        "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "sid": os.getsid(0),
        "argv": sys.argv, "orig_argv": sys.orig_argv, "cwd": os.getcwd(),
        "env": dict(os.environ), "path": sys.path, "main": sys.modules["__main__"].__spec__.name,
        "umask": [line for line in status.splitlines() if line.startswith("Umask:")],
        "stdio": [_identity(fd) for fd in (0, 1, 2)], "open": _open_beyond_stdio(),
        "signals": {sig.name: repr(signal.getsignal(sig)) for sig in SIGNALS},
        "blocked": sorted(int(sig) for sig in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "limits": {name: resource.getrlimit(getattr(resource, name))
                   for name in dir(resource) if name.startswith("RLIMIT_")},
        "python_threads": threading.active_count(), "flags": repr(sys.flags),
        "authkey": bytes(multiprocessing.current_process().authkey).hex(),
        "random": random.random(),
    }


if __name__ == "__main__":
    print(REPORT + json.dumps(report()), flush=True)
    main()

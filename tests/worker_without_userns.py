"""Run as root: `python -m tests.worker_without_userns UID`: become UID (no groups) in a process
that may not create namespaces, as a container started without vaultd's seccomp profile is
(Docker's default profile refuses `unshare`), confine as a render worker does, then start a
thread as rendering does. Prints one JSON line: the layers confine reports, and whether the
thread started (or the error it raised).

Nothing imported here starts a thread: a threaded process could not be confined as a worker is."""

from __future__ import annotations

import errno
import json
import sys
import sysconfig
import threading

import pyseccomp as seccomp

from render.sandbox.confine import confine
from render.sandbox.layers import report
from tests.office_unprivileged import become

MEMORY_LIMIT = 1 << 30


def refuse_namespaces() -> None:
    """`unshare` fails with EPERM, everything else is allowed (Docker's default profile)."""
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "unshare")
    rules.load()


def main(argv: list[str]) -> None:
    # What confine reads lazily, read while this machine's Python (under /root) is readable.
    sysconfig.get_paths()
    become(int(argv[0]))
    refuse_namespaces()
    layers = confine(MEMORY_LIMIT)
    try:
        started = threading.Thread(target=lambda: None)
        started.start()
        started.join()
        thread = "started"
    except RuntimeError as error:
        thread = str(error)
    print(json.dumps({"layers": report(int(layers)), "thread": thread}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

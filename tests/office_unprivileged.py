"""Run as root: `python -m tests.office_unprivileged UID WHAT ARGS...`: import the converter's
code, become UID (no groups), then, as that uid:

- `launch JOB_DIR INPUT`: run the converter's launcher (render.office.launch, sandbox required);
- `attacks JOB_DIR PORT`: confine as the converter and try the escapes of tests.office_attacks;
- `threads COUNT`: hold COUNT threads until stdin closes (a busy vaultd's uid).

This is how a vaultd that does not run as root starts its converter: the confinement's
unprivileged path (a user namespace instead of a uid switch). The code is imported before the
switch because this machine's Python lives under /root, which UID may not read; nothing imported
here may start a thread (a threaded process cannot enter a user namespace)."""

from __future__ import annotations

import os
import sys
import threading

from render.office import launch
from tests import office_attacks

MEMORY_LIMIT = 4 << 30  # vaultd.services.files.office's (importing it starts a thread)


def become(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def hold_threads(count: int) -> None:
    done = threading.Event()
    for _ in range(count):
        threading.Thread(target=done.wait, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    done.set()


def main(argv: list[str]) -> None:
    uid, what, args = int(argv[0]), argv[1], argv[2:]
    become(uid)
    if what == "launch":
        launch.main([args[0], args[1], str(MEMORY_LIMIT), "60", "required"])
    elif what == "attacks":
        office_attacks.main(args[0], int(args[1]))
    else:
        hold_threads(int(args[0]))


if __name__ == "__main__":
    main(sys.argv[1:])

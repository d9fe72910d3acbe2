"""Run as root: `python -m tests.office_unprivileged UID launch JOB_DIR INPUT` or
`... UID attacks JOB_DIR PORT`: import the converter's code, become UID (no groups), then run the
converter's launcher (render.office.launch) or the escape attempts (tests.office_attacks) in this
process. It is how a vaultd that does not run as root starts its converter: the confinement's
unprivileged path (a user namespace instead of a uid switch). The interpreter is imported before
the switch because this machine's Python lives under /root, which UID may not read."""

from __future__ import annotations

import os
import sys

from render.office import launch
from tests import office_attacks

MEMORY_LIMIT = 4 << 30  # vaultd.services.office's (importing it starts a thread: no user namespace)


def become(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def main(argv: list[str]) -> None:
    uid, what, job_dir, last = int(argv[0]), argv[1], argv[2], argv[3]
    become(uid)
    if what == "launch":
        launch.main([job_dir, last, str(MEMORY_LIMIT), "60", "required"])
    else:
        office_attacks.main(job_dir, int(last))


if __name__ == "__main__":
    main(sys.argv[1:])

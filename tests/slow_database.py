"""A stand-in for `vaultd.secantus_server` that is slow to start, or dies while starting:
`python -m tests.slow_database <the server's arguments>`. Before it runs the real server (in
this same process, with the same arguments) it writes its pid to `<storage>/wrapper.pid`, then
sleeps `SLOW_DATABASE_SECONDS`; with `SLOW_DATABASE_EXIT` set, it prints `SLOW_DATABASE_WORDS`
and exits with that status instead of starting the server (a store the server cannot open)."""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

MODULE = "tests.slow_database"
SECONDS = "SLOW_DATABASE_SECONDS"
EXIT = "SLOW_DATABASE_EXIT"
WORDS = "SLOW_DATABASE_WORDS"
PID_FILE = "wrapper.pid"


def _storage(arguments: list[str]) -> Path:
    return Path(arguments[arguments.index("--storage-path") + 1])


def main() -> None:
    (_storage(sys.argv) / PID_FILE).write_text(str(os.getpid()))
    time.sleep(float(os.environ.get(SECONDS, "0")))
    status = os.environ.get(EXIT)
    if status is not None:
        print(os.environ.get(WORDS, "stopped"), file=sys.stderr, flush=True)
        raise SystemExit(int(status))
    runpy.run_module("vaultd.secantus_server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

"""An embedded database left running by a vaultd that died: found, stopped, waited for.

A SecantusDB child normally dies with its vaultd (`PR_SET_PDEATHSIG`), but a server that
outlives it (an older vaultd, a parent killed while the child was starting) still holds
WiredTiger's lock on `<data_dir>/db`, and a new server on that store would exit at once. The
caller holds the data directory's lock, so any SecantusDB serving this store is an orphan: it
is given a moment to finish the clean stop its parent's death began (SIGTERM), then killed.
SIGKILL is safe once its journal buffer has reached the file, within 0.2 s of a write
(measured); an orphan has had no client since its vaultd died, over a second before it is
killed (docs/architecture.md, "The embedded database").

Only a process whose /proc cmdline is `python -m vaultd.secantus_server ... --storage-path <this
store>` (or `python -m secantus`, as an older vaultd started it) is ever signalled; anything else
is left alone.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

log = logging.getLogger("vaultd")

GRACE_SECONDS = 1.0  # for its own clean stop, which usually takes 0.1-2.5 s
ORPHAN_WAIT_SECONDS = 10.0  # for one that is not ours to kill
SERVER_MODULE = "vaultd.secantus_server"
SERVERS = {SERVER_MODULE, "secantus"}


class OrphanDbError(Exception):
    """An orphaned database of this store could not be stopped; the message names its pid."""


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _alive(pid: int) -> bool:
    """Running, not a zombie (a zombie holds no lock and only waits for its parent)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return "Z" not in line.split()[1]
    except OSError:
        return False
    return False


def _serves(pid: int, storage: Path) -> bool:
    args = _cmdline(pid)
    if not SERVERS & set(args) or "--storage-path" not in args:
        return False
    index = args.index("--storage-path") + 1
    if index >= len(args):
        return False
    where = Path(args[index])
    try:  # a relative path is relative to that process's working directory
        if not where.is_absolute():
            where = Path(os.readlink(f"/proc/{pid}/cwd")) / where
        return where.resolve() == storage.resolve()
    except OSError:
        return False


def find_orphans(storage: Path) -> list[int]:
    """Pids of live SecantusDB servers on `storage` (none but our own may exist)."""
    own = os.getpid()
    pids = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    return [pid for pid in pids if pid != own and _serves(pid, storage) and _alive(pid)]


def stop_orphans(storage: Path) -> None:
    """Wait briefly for every orphan of `storage` to stop, then SIGKILL it (one line each)."""
    if not Path("/proc/self").is_dir():
        return  # no /proc (not Linux): nothing to look at; the start-up error names the log
    for pid in find_orphans(storage):
        _stop(pid, storage)


def _stop(pid: int, storage: Path) -> None:
    left = f"the embedded database (pid {pid}) a previous vaultd left running on {storage}"
    if _gone_within(pid, GRACE_SECONDS):
        log.warning("waited for %s to stop", left)
        return
    if not _serves(pid, storage):  # gone, and its pid already reused by something else
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    except PermissionError:
        log.warning("waiting for %s (not ours to stop)", left)
        if not _gone_within(pid, ORPHAN_WAIT_SECONDS):
            raise OrphanDbError(f"{storage} is still held by {left}; stop it, then start "
                                "vaultd again") from None
        return
    _gone_within(pid, ORPHAN_WAIT_SECONDS)
    log.warning("stopped %s", left)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True

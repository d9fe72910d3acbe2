"""Finding a vaultd's child processes through /proc, for fault-injection tests."""

from __future__ import annotations

import os
from pathlib import Path


def all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def children(pid: int) -> list[int]:
    return [child for child in all_pids() if parent_of(child) == pid]


def cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    except OSError:
        return ""


def render_workers(vaultd_pid: int) -> list[int]:
    """The pool workers: forked by the render zygote (multiprocessing's fork server), itself a
    child of vaultd (not the database, not the resource tracker)."""
    zygotes = [p for p in children(vaultd_pid) if "forkserver" in cmdline(p)]
    return [worker for zygote in zygotes for worker in children(zygote)]


def database_process(vaultd_pid: int) -> int | None:
    for pid in children(vaultd_pid):
        if "secantus" in cmdline(pid):
            return pid
    return None


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError(pid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def running(pid: int) -> bool:
    """Alive and not a zombie: a process that has exited but not been reaped yet counts as gone."""
    try:
        return alive(pid) and "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False

"""What is checked before vaultd (or vault-admin) starts anything: the data directory exists
and is ours alone, and the listening address is free. Every error names what is at fault.

The lock is `<data_dir>/vaultd.lock`, taken when the embedded database is used (it serves one
process only; several vaultd on one MongoDB may share a directory). It is held with `flock` for
the life of the process (the kernel releases it however the process dies) and holds the
holder's pid and program name, so a second vaultd says who has the directory instead of
failing inside the embedded database.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path
from typing import IO

from tornado.netutil import bind_sockets

from vaultd.config import Settings

LOCK_FILE = "vaultd.lock"
EMBEDDED_DB_DIR = "db"


class StartupError(Exception):
    """vaultd or vault-admin cannot start; the message names the path, address or setting."""


def prepare_data_dir(settings: Settings) -> Path:
    """Create the data directory when missing; an unusable one is a StartupError naming it."""
    path = settings.data_path
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)  # private from the start
        probe = path / ".write-test"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise StartupError(f"data_dir {path}: cannot use it: {exc.strerror or exc}") from None
    return path


def holds_vault(settings: Settings) -> bool:
    """Whether the data directory holds a vault. With a configured MongoDB the data directory
    is not where the vault lives, so any directory will do."""
    return bool(settings.mongodb_uri) or (settings.data_path / EMBEDDED_DB_DIR).is_dir()


class DataDirLock:
    """An exclusive lock on the data directory, with the holder's pid and program inside."""

    def __init__(self, data_dir: Path, program: str) -> None:
        self.path = data_dir / LOCK_FILE
        self.program = program
        self._file: IO[str] | None = None

    def acquire(self) -> DataDirLock:
        try:
            handle = open(self.path, "a+")  # noqa: SIM115 - held for the life of the process
        except OSError as exc:
            raise StartupError(f"{self.path}: cannot open the lock file: {exc.strerror}") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(handle)
            handle.close()
            raise StartupError(
                f"data directory {self.path.parent} is in use by {holder}; stop it first, or "
                "use another --data-dir") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()} {self.program}\n")
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the flock
            self._file = None


def read_holder(handle: IO[str]) -> str:
    handle.seek(0)
    fields = handle.read().split()
    if len(fields) >= 2 and fields[0].isdigit():
        program = "another vaultd" if fields[1] == "vaultd" else fields[1]
        return f"{program} (pid {fields[0]})"
    return "another process"


def holder_of(data_dir: Path) -> str | None:
    """Who holds the data directory's lock, or None when nobody does."""
    try:
        with open(data_dir / LOCK_FILE) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return read_holder(handle)
            return None
    except FileNotFoundError:
        return None


def bind(settings: Settings) -> list[socket.socket]:
    """The listening sockets, bound before the database starts, so a taken port fails fast."""
    try:
        return bind_sockets(settings.port, settings.host)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        _close_sockets_left_open(exc)
        raise StartupError(
            f"cannot listen on {settings.host}:{settings.port}: {reason} (set --port or "
            "VAULTD_PORT, --host or VAULTD_HOST)") from None


def _close_sockets_left_open(failure: OSError) -> None:
    """Close what `bind_sockets` opened before it raised: it leaves the socket whose bind failed
    (and any of the host's other addresses it had bound) open in its frame. The process exits
    on this error, but the tests' in-process vaultd tries another port, and those sockets would
    then be closed by the collector, warning inside whichever test runs at the time."""
    frame_of_failure = failure.__traceback__
    while frame_of_failure is not None:
        for value in frame_of_failure.tb_frame.f_locals.values():
            for candidate in value if isinstance(value, list) else [value]:
                if isinstance(candidate, socket.socket):
                    candidate.close()
        frame_of_failure = frame_of_failure.tb_next

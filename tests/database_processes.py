"""SecantusDB processes of a test's own: one started parented to no vaultd, and waiting for a
killed vaultd's embedded database to close."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.processes import all_pids, cmdline
from tests.vault_process import ROOT, VaultProcess, free_port
from tests.waiting import wait_until


def secantus(storage: Path, log_path: Path, port: int | None = None,
             auth: bool = True) -> subprocess.Popen[bytes]:
    """A SecantusDB of the test's own, parented to no vaultd."""
    storage.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port",
           str(port or free_port()), "--storage-path", str(storage), "--log-level", "INFO",
           *(["--auth"] if auth else [])]
    with open(log_path, "ab") as log:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_for_orphaned_database_to_exit(server: VaultProcess) -> None:
    """The embedded database gets SIGTERM when its vaultd dies; it needs a moment to close."""

    storage = str(server.data_dir / "db")

    def gone() -> bool:
        return not any(storage in cmdline(pid) for pid in all_pids())

    wait_until(gone, timeout=30)

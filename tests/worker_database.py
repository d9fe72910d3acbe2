"""One embedded SecantusDB per test process (per pytest-xdist worker), shared by the vaultd that
the module fixtures start (`tests.vault_process.running_vault`, `tests.inprocess.inprocess_vault`;
the session's vaultd keeps its own, see tests/conftest.py).

A vaultd's own embedded database costs a start (about 4 s on a fresh data directory: a start
without authentication to create its user, a clean stop, a start with it) and a clean stop
(about 2 s, WiredTiger's checkpoint): most of a vaultd's start and stop. Here the server starts
once per worker; each vaultd is pointed at it through the documented settings
(`mongodb.uri`, `mongodb.database`) with a database of its own, named after its data directory,
so its data is apart from every other vaultd's and a restart on the same directory finds its
data again. A module's databases are dropped when the module is done (`drop_released`).

What a vaultd with an external database does differently (no lock of the data directory for the
database's sake, no `db/` in it, no supervision of a database child, the restore's and the
health report's wording) is what the tests of those things keep a database of their own for:
`running_vault(..., own_database=True)`, or a `VaultProcess` started directly.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pymongo import MongoClient

from vaultd import embedded_db

URI = "VAULTD_MONGODB_URI"
# The tests' own connections (set-up through the services, checks of what was stored) wait
# out a loaded host: vaultd's 2 s to find its database (`vaultd.db.SELECTION_TIMEOUT_MS`) is
# for answering a request fast, which they are not doing.
TEST_CONNECT_TIMEOUT_MS = 30_000
DATABASE = "VAULTD_MONGODB_DATABASE"


def database_name(data_dir: Path) -> str:
    """The database of the vaultd serving `data_dir`: the same for every start on it."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:20]
    return f"vault_{digest}"


@dataclass
class WorkerDatabase:
    """The worker's server, started at first use and stopped at the session's end
    (`pytest_sessionfinish` in conftest.py; at exit otherwise)."""

    server: embedded_db.EmbeddedServer | None = None
    storage: Path | None = None
    released: set[str] = field(default_factory=set)
    _stop_registered: bool = False

    def uri(self) -> str:
        if self.server is None or self.server.process.poll() is not None:
            self.storage = Path(tempfile.mkdtemp(prefix="vaultd-worker-db-"))
            # Started from the test's main thread: the database dies with the worker
            # (vaultd.embedded_db, PR_SET_PDEATHSIG follows the thread that started it).
            self.server = embedded_db.start(self.storage / "db", record_address=False)
            if not self._stop_registered:
                atexit.register(self.stop)
                self._stop_registered = True
        return self.server.uri

    def env(self, data_dir: Path) -> dict[str, str]:
        """The settings pointing the vaultd of `data_dir` at its database on this server."""
        name = database_name(data_dir)
        self.released.discard(name)
        return {URI: self.uri(), DATABASE: name}

    def release(self, env: dict[str, str]) -> None:
        """The vaultd using `env` stopped: its database may go once its module is done (a test
        may still read it, or start the vaultd again on the same directory)."""
        if self.server is not None and env.get(URI) == self.server.uri and DATABASE in env:
            self.released.add(env[DATABASE])

    def drop_released(self) -> None:
        if self.server is None or not self.released:
            return
        client: MongoClient[dict[str, Any]] = MongoClient(self.server.uri)
        try:
            for name in sorted(self.released):
                client.drop_database(name)
        finally:
            client.close()
        self.released.clear()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.storage is not None:
            shutil.rmtree(self.storage, ignore_errors=True)
            self.storage = None


WORKER_DATABASE = WorkerDatabase()


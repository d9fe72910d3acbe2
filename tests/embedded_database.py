"""A real embedded SecantusDB for in-process service tests: a database of its own on the test
worker's shared server (or a server of its own on a directory of its own, started and stopped);
and a `Db` on it with vaultd's indexes, as vaultd opens it (`recorded_db`: with a
`tests.db_reads.QueryRecorder` listening, for tests of what a piece of work reads)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, monitoring

from tests.worker_database import WORKER_DATABASE, database_name
from vaultd import embedded_db
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes


@dataclass
class SharedDatabase(embedded_db.EmbeddedServer):
    """A database of its own (`database`) on the test worker's shared server
    (tests.worker_database): the server is not this one's to stop."""

    database: str = "vaultd"

    def stop(self, timeout: float = 15.0) -> None:
        raise AssertionError("the worker's shared database server is stopped by the worker")


def database_of(server: embedded_db.EmbeddedServer) -> str:
    return server.database if isinstance(server, SharedDatabase) else "vaultd"


@contextmanager
def running_database(storage: Path,
                     own_server: bool = False) -> Iterator[embedded_db.EmbeddedServer]:
    """A database for the services, named after `storage`, on the worker's shared server (its
    start and stop are most of a module's set-up otherwise), dropped after; with `own_server`,
    a server of its own on `storage` (for a test that signals it or reads its files)."""
    if own_server:
        running = embedded_db.start(storage, record_address=False)
        try:
            yield running
        finally:
            running.stop()
        return
    WORKER_DATABASE.uri()
    worker = WORKER_DATABASE.server
    assert worker is not None
    shared = SharedDatabase(worker.process, worker.host, worker.port, worker.storage,
                            worker.credentials, database=database_name(storage))
    try:
        yield shared
    finally:
        WORKER_DATABASE.drop(shared.database)


@asynccontextmanager
async def vault_db(server: embedded_db.EmbeddedServer) -> AsyncIterator[Db]:
    database = connect(server.uri, database_of(server))
    await ensure_indexes(database)
    try:
        yield database
    finally:
        await database.close()


@asynccontextmanager
async def recorded_db(server: embedded_db.EmbeddedServer,
                      recorder: monitoring.CommandListener) -> AsyncIterator[Db]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        server.uri, tz_aware=True, uuidRepresentation="standard", event_listeners=[recorder])
    database = Db(client, client[database_of(server)])
    await ensure_indexes(database)
    try:
        yield database
    finally:
        await database.close()

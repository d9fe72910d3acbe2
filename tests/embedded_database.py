"""A real embedded SecantusDB for in-process service tests: started on a directory of its own,
stopped after; and a `Db` on it with vaultd's indexes, as vaultd opens it (`recorded_db`: with a
`tests.db_reads.QueryRecorder` listening, for tests of what a piece of work reads)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, monitoring

from tests.worker_database import DATABASE, TEST_CONNECT_TIMEOUT_MS, URI, WORKER_DATABASE
from vaultd import embedded_db
from vaultd.db import MAX_IDLE_MS, Db, connect
from vaultd.db_indexes import ensure_indexes


@contextmanager
def running_database(storage: Path) -> Iterator[embedded_db.EmbeddedServer]:
    running = embedded_db.start(storage, record_address=False)
    try:
        yield running
    finally:
        running.stop()


@asynccontextmanager
async def vault_db(server: embedded_db.EmbeddedServer) -> AsyncIterator[Db]:
    database = connect(server.uri, "vaultd", TEST_CONNECT_TIMEOUT_MS)
    await ensure_indexes(database)
    try:
        yield database
    finally:
        await database.close()


@asynccontextmanager
async def recorded_db(server: embedded_db.EmbeddedServer,
                      recorder: monitoring.CommandListener) -> AsyncIterator[Db]:
    async with _recorded(server.uri, "vaultd", recorder) as database:
        yield database


@asynccontextmanager
async def recorded_worker_db(prefix: str,
                             recorder: monitoring.CommandListener) -> AsyncIterator[Db]:
    """As `recorded_db`, on a database of its own (`<prefix>_<random>`) on the test worker's
    shared SecantusDB (`tests.worker_database`): no server of the module's own to start."""
    uri, name = WORKER_DATABASE.uri(), f"{prefix}_{secrets.token_hex(6)}"
    try:
        async with _recorded(uri, name, recorder) as database:
            yield database
    finally:
        WORKER_DATABASE.release({URI: uri, DATABASE: name})


@asynccontextmanager
async def _recorded(uri: str, name: str,
                    recorder: monitoring.CommandListener) -> AsyncIterator[Db]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        uri, tz_aware=True, uuidRepresentation="standard", event_listeners=[recorder],
        maxIdleTimeMS=MAX_IDLE_MS)  # as vaultd's: the server drops a connection idle 300 s
    database = Db(client, client[name])
    await ensure_indexes(database)
    try:
        yield database
    finally:
        await database.close()

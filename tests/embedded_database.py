"""A real embedded SecantusDB for in-process service tests: started on a directory of its own,
stopped after; and a `Db` on it with vaultd's indexes, as vaultd opens it (`recorded_db`: with a
`tests.db_reads.QueryRecorder` listening, for tests of what a piece of work reads)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, monitoring

from vaultd import embedded_db
from vaultd.db import Db, connect
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
    database = connect(server.uri, "vaultd")
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
    database = Db(client, client["vaultd"])
    await ensure_indexes(database)
    try:
        yield database
    finally:
        await database.close()

"""A real embedded SecantusDB for in-process service tests: started on a directory of its own,
stopped after; and a `Db` on it with vaultd's indexes, as vaultd opens it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from vaultd import embedded_db
from vaultd.db import Db, connect, ensure_indexes


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

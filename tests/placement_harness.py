"""Fixtures for tests of a placement trace through the services (`vaultd.services.tracing`): a
database server for the module, a `Db` on it with vaultd's indexes per test, and a pool of one
real worker. A module takes them by name: `server, db, pool = (placement_harness.server, ...)`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from render.pool.render_pool import RenderPool
from tests.embedded_database import running_database, vault_db
from vaultd import embedded_db
from vaultd.db import Db


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded_db.EmbeddedServer]:
    with running_database(Path(tmp_path_factory.mktemp("placement")) / "db") as running:
        yield running


@pytest.fixture
async def db(server: embedded_db.EmbeddedServer) -> AsyncIterator[Db]:
    async with vault_db(server) as database:
        yield database


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    single = RenderPool(workers=1, queue_size=4, timeout_seconds=120,
                        memory_limit_bytes=2 << 30)
    yield single
    await single.close()

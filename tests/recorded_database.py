"""The fixtures of a module that counts what the embedded database reads: one real embedded
SecantusDB for the module (`server`), the driver's query recorder (`recorder`) and a `Db` with
vaultd's indexes listening through it (`db`). A module imports the three by name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.db_reads import QueryRecorder
from tests.embedded_database import recorded_db, running_database
from vaultd import embedded_db
from vaultd.db import Db


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded_db.EmbeddedServer]:
    with running_database(tmp_path_factory.mktemp("recorded") / "db") as running:
        yield running


@pytest.fixture(scope="module")
def recorder() -> QueryRecorder:
    return QueryRecorder()


@pytest.fixture(scope="module")
async def db(server: embedded_db.EmbeddedServer, recorder: QueryRecorder) -> AsyncIterator[Db]:
    async with recorded_db(server, recorder) as database:
        yield database

"""The fixtures of a module that counts what the embedded database reads: one real embedded
SecantusDB for the module (`server`), the driver's query recorder (`recorder`) and a `Db` with
vaultd's indexes listening through it (`db`). A module imports the three by name; or, for a
database of its own on the test worker's shared SecantusDB rather than a server of its own,
`recorder` and `worker_db` (a fixture named `db` too, so the tests read the same); or, for each
test a database of its own there (a test that counts what it reads from an empty log),
`recorder_per_test` and `db_per_test` (named `recorder` and `db`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.db_reads import QueryRecorder
from tests.embedded_database import recorded_db, recorded_worker_db, running_database
from vaultd import embedded_db
from vaultd.db import Db
from vaultd.services.common import background


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


@pytest.fixture(scope="module", name="db")
async def worker_db(request: pytest.FixtureRequest,
                    recorder: QueryRecorder) -> AsyncIterator[Db]:
    """`db` on a database named after the module on the worker's shared server
    (`tests.embedded_database.recorded_worker_db`), dropped when the module is done; the
    background steps its tests started (a revoke-all's marking) end before it closes."""
    prefix = request.module.__name__.rpartition(".")[2][:40]
    async with recorded_worker_db(prefix, recorder) as database:
        try:
            yield database
        finally:
            await background.settled()


@pytest.fixture(name="recorder")
def recorder_per_test() -> QueryRecorder:
    """`recorder` for one test, with `db_per_test`."""
    return QueryRecorder()


@pytest.fixture(name="db")
async def db_per_test(request: pytest.FixtureRequest,
                      recorder: QueryRecorder) -> AsyncIterator[Db]:
    """`db` for one test: a database of its own on the worker's shared server, named after the
    module, dropped when the module is done (`tests.embedded_database.recorded_worker_db`)."""
    prefix = request.module.__name__.rpartition(".")[2][:40]
    async with recorded_worker_db(prefix, recorder) as database:
        yield database

"""vaultd's database client closes its own pooled connections before the embedded SecantusDB
drops them (`vaultd.db.MAX_IDLE_MS`).

SecantusDB drops a client's connection idle 300 s. The async driver does not read a pooled
connection between commands, so it learns of the close only after sending its next command on
it, and that command fails ("connection [is already] closed", an `AutoReconnect` the embedded
URI's `retryWrites=false` does not retry): the flake of three CI runs, an account made through
a test's long-quiet service client. The failure is reproduced here on a real SecantusDB whose
idle limit is a second, so that the test need not wait five minutes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import AutoReconnect
from secantus.server import DEFAULT_CLIENT_IDLE_TIMEOUT_S, SecantusDBServer

from tests.worker_database import WORKER_DATABASE
from vaultd.db import MAX_IDLE_MS, connect
from vaultd.embedded_db import local_uri

SERVER_IDLE_SECONDS = 1.0
QUIET_SECONDS = 1.6  # past the server's limit: it has dropped the connection


@pytest.fixture(scope="module")
def quick_dropping_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SecantusDB that drops a connection idle a second; its URI as vaultd's embedded one."""
    storage = tmp_path_factory.mktemp("quick-dropping") / "db"
    server = SecantusDBServer(host="127.0.0.1", port=0, storage_path=str(storage),
                              client_idle_timeout_s=SERVER_IDLE_SECONDS)
    server.start()
    try:
        host, port = server.address
        yield local_uri(host, port)
    finally:
        server.stop()


def test_the_pool_lets_a_connection_go_well_before_the_server_does() -> None:
    db = connect(WORKER_DATABASE.uri(), "idle_check")
    try:
        idle = db.client.options.pool_options.max_idle_time_seconds
    finally:
        asyncio.run(db.close())
    assert idle == MAX_IDLE_MS / 1000
    assert idle is not None and idle <= DEFAULT_CLIENT_IDLE_TIMEOUT_S / 2


async def test_a_write_after_the_server_dropped_a_quiet_connection_fails_without_the_limit(
        quick_dropping_database: str) -> None:
    # What the limit is for: a client without one reuses the dropped connection.
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(quick_dropping_database)
    try:
        await client.vaultd.drafts.insert_one({"n": 1})
        await asyncio.sleep(QUIET_SECONDS)
        with pytest.raises(AutoReconnect, match=r"connection (is already )?closed"):
            await client.vaultd.drafts.insert_one({"n": 2})
    finally:
        await client.close()


async def test_vaultd_s_client_writes_after_a_quiet_spell_on_a_fresh_connection(
        quick_dropping_database: str) -> None:
    # The limit in the same proportion to the server's as MAX_IDLE_MS is to 300 s.
    scaled = int(SERVER_IDLE_SECONDS * 1000 * MAX_IDLE_MS / (DEFAULT_CLIENT_IDLE_TIMEOUT_S * 1000))
    db = connect(f"{quick_dropping_database}&maxIdleTimeMS={scaled}", "vaultd")

    async def port() -> str:  # the client's end of the connection the command went on
        return str((await db.client.admin.command("whatsmyuri"))["you"])

    try:
        first = await port()
        assert await port() == first  # at once: the same connection, from the pool
        await asyncio.sleep(QUIET_SECONDS)
        await db.database.notes.insert_one({"n": 1})  # the command that failed above
        assert await db.database.notes.count_documents({}) == 1
        assert await port() != first  # the quiet connection was closed by the pool, not reused
    finally:
        await db.close()

"""vaultd's database client closes its own pooled connections before the embedded SecantusDB
drops them (`vaultd.db.MAX_IDLE_MS`): the server drops a client's connection idle 300 s, and a
connection the pool hands out as the server drops it fails its command ("connection is already
closed", an `AutoReconnect` the embedded URI does not retry), as test runs met on quiet clients.
Against the test worker's real SecantusDB, which tells each command's connection by its
client port."""

from __future__ import annotations

import asyncio

from secantus.server import DEFAULT_CLIENT_IDLE_TIMEOUT_S

from tests.worker_database import WORKER_DATABASE
from vaultd.db import MAX_IDLE_MS, connect


def test_the_pool_lets_a_connection_go_well_before_the_server_does() -> None:
    db = connect(WORKER_DATABASE.uri(), "idle_check")
    try:
        idle = db.client.options.pool_options.max_idle_time_seconds
    finally:
        asyncio.run(db.close())
    assert idle == MAX_IDLE_MS / 1000
    assert idle is not None and idle <= DEFAULT_CLIENT_IDLE_TIMEOUT_S / 2


async def test_a_connection_idle_past_the_limit_is_replaced_not_reused() -> None:
    uri = WORKER_DATABASE.uri()
    # The limit as a URI sets it (a quarter second), so that the test need not wait a minute.
    db = connect(f"{uri}{'&' if '?' in uri else '?'}maxIdleTimeMS=250", "idle_check")

    async def port() -> str:  # the client's end of the connection the command went on
        return str((await db.client.admin.command("whatsmyuri"))["you"])

    try:
        first = await port()
        assert await port() == first  # at once: the same connection, from the pool
        await asyncio.sleep(0.6)
        assert await port() != first  # idle past the limit: closed by the pool, a new one
    finally:
        await db.close()

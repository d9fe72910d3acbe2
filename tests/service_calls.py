"""Service calls from a test's thread against a vaultd's database, on one client per database
kept open on an event loop of its own.

A test sets up through the services (`VaultProcess.new_account`, `run_service`). Opening a
client for each call cost a connection and the embedded database's authentication, about 20 of
the 26 ms that `new_account` took, and nearly every API test makes an account. The in-process
vaultd (`tests.inprocess`) calls through this; a vaultd process, whose tests may kill or cut its
database between calls, keeps a client a call. The loop runs in a daemon thread, and `close`
(at the vaultd's stop) ends it; the next call starts another. A call blocks the calling thread
until its coroutine is done, as `asyncio.run` did."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from tests.worker_database import TEST_CONNECT_TIMEOUT_MS
from vaultd.db import Db, connect

# The test's side, for the in-process vaultd's log routing (tests.inprocess_logs): what a service
# call logs is the test's to see (`caplog`), as it was when the call ran in the test's thread.
SERVICE_THREAD = "test-service-calls"
# How long the clients may take to close: a client whose database was stopped or killed (an
# outage test) would wait for a server to end its sessions on for its whole selection timeout.
CLOSE_SECONDS = 2.0


class ServiceCalls:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._clients: dict[tuple[str, str], Db] = {}
        self._lock = threading.Lock()

    def run(self, uri: str, name: str, call: Callable[[Db], Awaitable[Any]]) -> Any:
        running = asyncio.run_coroutine_threadsafe(self._call(uri, name, call), self._running())
        return running.result()

    async def _call(self, uri: str, name: str, call: Callable[[Db], Awaitable[Any]]) -> Any:
        db = self._clients.get((uri, name))
        if db is None:
            db = self._clients[(uri, name)] = connect(uri, name, TEST_CONNECT_TIMEOUT_MS)
        return await call(db)

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, daemon=True,
                                                name=SERVICE_THREAD)
                self._thread.start()
                self._loop = loop
            return self._loop

    def close(self) -> None:
        with self._lock:
            loop, thread, clients = self._loop, self._thread, list(self._clients.values())
            self._loop, self._thread, self._clients = None, None, {}
        if loop is None or thread is None:
            return

        async def closed() -> None:
            for db in clients:
                await db.close()

        closing = asyncio.run_coroutine_threadsafe(closed(), loop)
        try:
            closing.result(CLOSE_SECONDS)
        except TimeoutError:  # its database is gone: a client's goodbye would wait for it
            closing.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_SECONDS)
        if not thread.is_alive():
            loop.close()

"""vaultd keeps its embedded database running: a SecantusDB child that dies is started again on
the same store, and service resumes without restarting vaultd.

The new server takes the old port when it can, so the driver reconnects by itself; on another
port the client is replaced (`Db.reconnect`). Meanwhile requests fail fast with a JSON 503 and
Retry-After (`vaultd.web.base.as_vault_error`). The restart runs on the event loop's thread:
`PR_SET_PDEATHSIG` follows the thread that started the child, and the loop's lives as long
as vaultd.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging

from vaultd import embedded_db
from vaultd.db import Db
from vaultd.embedded_db import EmbeddedServer

log = logging.getLogger("vaultd")

POLL_SECONDS = 0.2
RETRY_DELAYS_SECONDS = (0.5, 1.0, 2.0, 5.0)  # then every 5 s until it starts


class DbSupervisor:
    """Watches `server` and restarts it; `server` is always the current one (for close)."""

    def __init__(self, server: EmbeddedServer, db: Db) -> None:
        self.server = server
        self.db = db
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            process = self.server.process
            if process.poll() is None:
                continue
            log.warning("embedded database (pid %d) exited with code %s; restarting it "
                        "(requests get 503 meanwhile)", process.pid, process.returncode)
            await self._restart()

    async def _restart(self) -> None:
        old = self.server
        for attempt in itertools.count():
            # The same port first (the driver finds it again); another if that one is taken.
            port = old.port if attempt == 0 else None
            try:
                self.server = embedded_db.spawn(old.storage, None, old.credentials, port,
                                                old.start_seconds)
            except OSError as exc:  # no process at all (out of pids or files): retry later
                log.warning("embedded database did not restart: %s", exc.strerror or exc)
            else:
                failure = await _failure_to_come_up(self.server)
                if failure is None:
                    break
                log.warning("embedded database did not restart: %s", failure)
            await asyncio.sleep(RETRY_DELAYS_SECONDS[min(attempt, len(RETRY_DELAYS_SECONDS) - 1)])
        embedded_db.record(self.server)
        if self.server.port != old.port:
            await self.db.reconnect(self.server.uri)
        log.warning("embedded database restarted (pid %d, port %d)",
                    self.server.process.pid, self.server.port)


async def _failure_to_come_up(server: EmbeddedServer) -> str | None:
    """None once the new server answers a command; why not, once it exits or stays silent
    past its start limit (then it is killed: nothing was written through it)."""
    deadline = asyncio.get_running_loop().time() + server.start_seconds
    while asyncio.get_running_loop().time() < deadline:
        if server.process.poll() is not None:
            return embedded_db.exit_message(server)
        if await _answers(server):
            return None
        await asyncio.sleep(0.05)
    server.process.kill()
    await asyncio.to_thread(server.process.wait)
    return embedded_db.not_started_message(server)


async def _answers(server: EmbeddedServer) -> bool:
    # A command, not a connection: a stop must not reach a server still inside its start.
    return await asyncio.to_thread(embedded_db.answering, server)

"""vaultd in the test's own process: the app `vaultd.main.serve` builds (the composition root, the
embedded SecantusDB, real render workers, real crypto), served on a loopback socket by an event
loop in a thread of the test process.

A thread, not the test's loop: the tests are synchronous httpx clients (and some call
`asyncio.run` for their set-up), so the app's loop must run while the test blocks on a request.
It saves a Python interpreter and vaultd's imports per start, and is for tests that need no
process boundary; a test that signals, kills or measures the server process keeps
`tests.vault_process.VaultProcess`. Several may run at once (the session's and a module's): each
on a loop and threads of its own, named after its port, by which its log is kept apart
(tests.inprocess_logs); what vaultd keeps per process is per loop (the background steps,
vaultd.services.common.background) or the same for each (the umask).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tests.inprocess_logs import ServerLog, thread_name
from tests.service_calls import ServiceCalls
from tests.vault_process import (
    PORT_ATTEMPTS,
    VaultProcess,
    assert_no_secrets_in_log,
    base_env,
    free_port,
    vault_env,
)
from tests.waiting import NotReached
from tests.worker_database import WORKER_DATABASE
from vaultd.config import Settings, load_settings
from vaultd.main import serve


@dataclass
class InProcessVault(VaultProcess):
    """A `VaultProcess` whose server runs in this process: the same URL, clients, CLI, services
    and log file; no `process` (nothing to signal)."""

    _thread: threading.Thread | None = field(default=None, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _stop: asyncio.Event | None = field(default=None, repr=False)
    _failure: BaseException | None = field(default=None, repr=False)
    _log: ServerLog | None = field(default=None, repr=False)
    _service_calls: ServiceCalls = field(default_factory=ServiceCalls, repr=False)
    running: ClassVar[list[InProcessVault]] = []

    def run_service(self, coro_factory: Any) -> Any:
        """On a client kept open while this vaultd runs (`tests.service_calls`): no test of an
        in-process vaultd stops or cuts its database, and nearly every test makes an account."""
        return self._service_calls.run(*self.database_address(), coro_factory)

    def start(self, timeout: float = 60.0) -> InProcessVault:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._start_once(timeout)
            except RuntimeError:
                # As `VaultProcess.start`: another process took the port before vaultd bound
                # it (vaultd binds first, so nothing else had started).
                taken = "Address already in use" in str(self._failure)
                if self.fixed_port or attempt == PORT_ATTEMPTS or not taken:
                    raise
                with contextlib.suppress(RuntimeError):  # it says the start failed: known
                    self.stop()
                self._failure = None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _start_once(self, timeout: float) -> InProcessVault:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.fixed_port or free_port()
        flags = {"host": "127.0.0.1", "port": self.port, "data_dir": str(self.data_dir)}
        env = {k: v for k, v in base_env(self.env).items() if k.startswith("VAULTD_")}
        settings = load_settings(env=env, flags=flags)
        InProcessVault.running.append(self)
        self._attach_log(settings.log_level)
        umask = _current_umask()
        self._failure = None
        self._thread = threading.Thread(target=self._serve, args=(settings,),
                                        name=thread_name(self.port), daemon=True)
        self._thread.start()
        try:
            self._wait_healthy(timeout)
        finally:
            # serve() sets vaultd's private umask for the process; the workers and the database
            # it started have it, the rest of the test process gets its own back.
            os.umask(umask)
        return self

    def _serve(self, settings: Settings) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            # Its executor's threads named after it too: their log records are this vaultd's.
            self._loop.set_default_executor(
                ThreadPoolExecutor(thread_name_prefix=thread_name(self.port)))
            self._stop = asyncio.Event()
            await serve(settings, until=self._stop.wait)

        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported to the test by start() and stop()
            self._failure = exc

    def _attach_log(self, level: str) -> None:
        self._log = ServerLog(self.log_path, level, self.port)
        self._log.install()

    def _detach_log(self) -> None:
        if self._log is not None:
            self._log.remove()
            self._log = None

    def _healthy(self) -> bool:
        if self._thread is not None and not self._thread.is_alive():
            raise RuntimeError(f"vaultd stopped early ({self._failure!r}):\n"
                               f"{self.log_text()[-3000:]}")
        return self._http_healthy()

    def stop(self, sig: int = 0, timeout: float = 30.0) -> int:
        """Stop as on SIGTERM (gracefully); 0 when the app stopped cleanly. A signal other than
        SIGTERM is not emulated: such a test needs a real process."""
        self._service_calls.close()  # before its database may go with it
        thread, loop, stop = self._thread, self._loop, self._stop
        InProcessVault.running = [other for other in InProcessVault.running if other is not self]
        if thread is None:
            return 0
        if loop is not None and stop is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout)
        self._detach_log()
        self._thread = None
        if thread.is_alive():
            raise RuntimeError(f"the in-process vaultd did not stop within {timeout} s")
        if self._failure is not None:
            raise RuntimeError("the in-process vaultd failed") from self._failure
        return 0


@contextmanager
def inprocess_vault(data_dir: Path, *, own_database: bool = False,
                    **env: str) -> Iterator[InProcessVault]:
    """`tests.vault_process.running_vault`, in this process: started (its settings from
    `vault_env`: 2 render workers, the worker's shared database), stopped, its log then checked
    for every registered secret."""
    server = InProcessVault(data_dir, env=vault_env(data_dir, env, own_database))
    try:
        server.start()
    except (NotReached, RuntimeError):
        server.stop()
        WORKER_DATABASE.release(server.env)
        raise
    try:
        yield server
    finally:
        server.stop()
        WORKER_DATABASE.release(server.env)
    assert_no_secrets_in_log(server)


def _current_umask() -> int:
    umask = os.umask(0o077)
    os.umask(umask)
    return umask

"""The logs of the in-process vaultd (`tests.inprocess`) kept apart from the test's and from each
other's, as processes' would be. A record is vaultd's when it is made in one of its threads (its
event loop's, named `vaultd-<port>`, and its executor's, `vaultd-<port>_<n>`): enabled at that
vaultd's level and written to its log file alone, through its redacting formatter. A record of
another thread but the test's main one (a library's own thread) cannot be told apart: it goes to
every running vaultd's log, so the check for secrets at each one's end sees it. The test's own
records (its main thread's, and its service calls' thread: `tests.service_calls`) see the
levels and handlers they would without them (pytest's capture and `caplog` included).

`logging` has one tree of loggers per process, so the split is made where a record is decided
and handed on: `Logger.isEnabledFor` and `Logger.callHandlers`, replaced while a vaultd runs and
put back when the last one stops."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from tests.service_calls import SERVICE_THREAD
from vaultd.logs import RedactingFormatter

# Test-side libraries that log from the test's own worker threads (its HTTP clients).
TEST_SIDE_LOGGERS = ("httpx", "httpcore")


def thread_name(port: int) -> str:
    """The name of the thread running the event loop of the in-process vaultd on `port` (its
    executor's threads: this name, `_` and a number)."""
    return f"vaultd-{port}"


class ServerLog:
    """One vaultd's log file: added to the routing by `install`, taken out by `remove`."""

    def __init__(self, path: Path, level: str, port: int) -> None:
        self.handler = logging.FileHandler(path)
        self.handler.setFormatter(
            RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.level = logging.getLevelName(level)
        self.thread = thread_name(port)

    def install(self) -> None:
        ROUTING.add(self)

    def remove(self) -> None:
        ROUTING.discard(self)
        self.handler.close()


class _Routing:
    """The running vaultd's logs by thread name, and the `Logger` methods replaced for them."""

    def __init__(self) -> None:
        self.logs: dict[str, ServerLog] = {}
        self._saved: tuple[Any, Any] | None = None

    def add(self, log: ServerLog) -> None:
        self.logs = {**self.logs, log.thread: log}  # replaced whole: read by other threads
        if self._saved is None:
            self._replace()

    def discard(self, log: ServerLog) -> None:
        self.logs = {name: kept for name, kept in self.logs.items() if kept is not log}
        if not self.logs and self._saved is not None:
            enabled, call_handlers = self._saved
            logging.Logger.isEnabledFor = enabled  # type: ignore[method-assign]
            logging.Logger.callHandlers = call_handlers  # type: ignore[method-assign]
            self._saved = None

    def _owners(self, name: str) -> list[ServerLog]:
        logs = self.logs
        owner = logs.get(name.split("_", 1)[0])
        return [owner] if owner is not None else list(logs.values())

    def _replace(self) -> None:
        main = threading.main_thread().ident
        enabled, call_handlers = logging.Logger.isEnabledFor, logging.Logger.callHandlers
        self._saved = (enabled, call_handlers)
        owners = self._owners

        def is_enabled_for(logger: logging.Logger, wanted: int) -> bool:
            if threading.get_ident() == main or threading.current_thread().name == SERVICE_THREAD:
                return enabled(logger, wanted)
            logs = owners(threading.current_thread().name)
            return not logger.disabled and any(wanted >= log.level for log in logs)

        def hand_on(logger: logging.Logger, record: logging.LogRecord) -> None:
            if record.thread == main or record.threadName == SERVICE_THREAD:
                call_handlers(logger, record)
            elif not record.name.startswith(TEST_SIDE_LOGGERS):
                for log in owners(record.threadName or ""):
                    if record.levelno >= log.level:
                        log.handler.handle(record)

        logging.Logger.isEnabledFor = is_enabled_for  # type: ignore[method-assign]
        logging.Logger.callHandlers = hand_on  # type: ignore[method-assign]


ROUTING = _Routing()

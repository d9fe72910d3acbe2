"""The log of an in-process vaultd (`tests.inprocess`) kept apart from the test's, as a process's
would be: records made in any thread but the test's main one are vaultd's (its event loop, its
executor threads), enabled at vaultd's level and written to its log file alone, through its
redacting formatter; the test's own records (its main thread's) see the levels and handlers they
would without it (pytest's capture and `caplog` included).

`logging` has one tree of loggers per process, so the split is made where a record is decided
and handed on: `Logger.isEnabledFor` and `Logger.callHandlers`, replaced while vaultd runs and
put back when it stops."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from vaultd.logs import RedactingFormatter

# Test-side libraries that log from the test's own worker threads (its HTTP clients).
TEST_SIDE_LOGGERS = ("httpx", "httpcore")


class ServerLog:
    """Installed by `install`, removed by `remove`; one at a time."""

    def __init__(self, path: Path, level: str) -> None:
        self.handler = logging.FileHandler(path)
        self.handler.setFormatter(
            RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.level = logging.getLevelName(level)
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        main = threading.main_thread().ident
        enabled, call_handlers = logging.Logger.isEnabledFor, logging.Logger.callHandlers
        self._saved = (enabled, call_handlers)
        level, handler = self.level, self.handler

        def is_enabled_for(logger: logging.Logger, wanted: int) -> bool:
            if threading.get_ident() == main:
                return enabled(logger, wanted)
            return not logger.disabled and wanted >= level

        def hand_on(logger: logging.Logger, record: logging.LogRecord) -> None:
            if record.thread == main:
                call_handlers(logger, record)
            elif not record.name.startswith(TEST_SIDE_LOGGERS):
                handler.handle(record)

        logging.Logger.isEnabledFor = is_enabled_for  # type: ignore[method-assign]
        logging.Logger.callHandlers = hand_on  # type: ignore[method-assign]

    def remove(self) -> None:
        if self._saved is not None:
            enabled, call_handlers = self._saved
            logging.Logger.isEnabledFor = enabled  # type: ignore[method-assign]
            logging.Logger.callHandlers = call_handlers  # type: ignore[method-assign]
            self._saved = None
        self.handler.close()

"""Task functions for the pool tests. They run inside spawned workers, so they live in a module
that a fresh interpreter can import (not in the test module, not as lambdas)."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path


def pid() -> int:
    return os.getpid()


def sleep_for(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def report_pid_then_sleep(path: str, seconds: float) -> int:
    """Announce which worker runs the task (so a test can kill it), then hang."""
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)
    return os.getpid()


def allocate(size: int) -> int:
    return len(bytearray(size))


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def raise_timeout_error() -> None:
    # A task's own TimeoutError (say, a storage read timing out) is not a render timeout.
    raise TimeoutError("storage read timed out")


class TwoArgError(Exception):
    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


def raise_unpicklable() -> None:
    # Pickles in the worker, fails to unpickle in the parent (the constructor wants two args).
    raise TwoArgError("a", "b")

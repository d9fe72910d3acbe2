"""Task functions for the pool tests, shipped into confined workers as source text.

A worker's Landlock ruleset lets it read the interpreter, its libraries and fonts, not this
repository's tests: a test module cannot be imported there. `task(fn, *args)` therefore sends
the builtin `eval` with an expression that defines `fn` from its source and calls it (no
production switch: any picklable callable is a task). Each function imports what it needs.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any


def task(fn: Callable[..., Any], *args: Any) -> tuple[Callable[..., Any], str]:
    """`pool.run(*task(fn, a, b))` runs `fn(a, b)` in a worker."""
    source = textwrap.dedent(inspect.getsource(fn))
    return (eval, f"(lambda ns: (exec({source!r}, ns), ns[{fn.__name__!r}](*{args!r}))[1])({{}})")


def pid() -> int:
    import os

    return os.getpid()


def sleep_for(seconds: float) -> int:
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def allocate(size: int) -> int:
    return len(bytearray(size))


def segfault() -> None:
    import ctypes

    ctypes.string_at(0)  # reads address 0: SIGSEGV


def raise_timeout_error() -> None:
    # A task's own TimeoutError (say, a storage read timing out) is not a render timeout.
    raise TimeoutError("storage read timed out")


def raise_unpicklable() -> None:
    class TwoArgError(Exception):
        def __init__(self, a: str, b: str) -> None:
            super().__init__(f"{a}/{b}")

    raise TwoArgError("a", "b")


def start_a_thread_with_no_room() -> None:
    """What a worker whose RLIMIT_NPROC counts a busy uid meets: no thread may start."""
    import resource
    import threading

    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    threading.Thread(target=lambda: None).start()


def page_cache_state() -> str:
    """The worker's page cache as text: entries, bytes, hits, misses, then a line per kept page
    "file_id version page"."""
    from render.worker import page_cache

    cache = page_cache.CACHE
    lines = [f"{len(cache)} {cache.nbytes} {cache.hits} {cache.misses}"]
    lines += [f"{k.file_id} {k.version} {k.page}" for k in cache.kept()]
    return "\n".join(lines)


def late_imports() -> str:
    """Modules the worker imported after it was confined, one a line (there should be none)."""
    from render.worker import late_imports

    return "\n".join(late_imports.since_confinement())

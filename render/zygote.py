"""The zygote: multiprocessing's fork server, preloaded with rendering, started without secrets.

Chromium's model: a process that has done the imports but seen no data forks each worker, so a
replacement (after a crash, a recycle or an account switch) costs a fork, not an interpreter
start. The fork server inherits the environment at the moment it starts: VAULTD_* variables
(the master key, backend credentials) are taken out for that moment so no worker ever has them.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import threading
from multiprocessing import forkserver
from multiprocessing.context import ForkServerContext

_PRELOAD = ["render.worker"]
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3
_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)


def context() -> ForkServerContext:
    """The fork-server context, its server started now if it is not running."""
    ctx = multiprocessing.get_context("forkserver")
    assert isinstance(ctx, ForkServerContext)
    with _lock:
        ctx.set_forkserver_preload(_PRELOAD)
        secrets = {k: v for k, v in os.environ.items() if k.startswith("VAULTD_")}
        for name in secrets:
            del os.environ[name]
        try:
            forkserver.ensure_running()
        finally:
            os.environ.update(secrets)
    return ctx


def protect_server() -> None:
    """PR_SET_DUMPABLE 0 on the server: no process of another uid (a worker) may read its memory
    or /proc files, and it leaves no core dump with keys in it."""
    _libc.prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(0), 0, 0, 0)


def server_not_dumpable() -> bool:
    return int(_libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)) == 0

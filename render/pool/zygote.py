"""The zygote: multiprocessing's fork server, preloaded with rendering, started without secrets.

Chromium's model: a process that has done the imports but seen no data forks each worker, so a
replacement (after a crash, a recycle or an account switch) costs a fork, not an interpreter
start. A worker also skips multiprocessing's re-import of the server's `__main__` (vaultd.main:
about 0.6 s of imports, and server code a worker has no use for): its task names what it runs.
The fork server inherits the environment at the moment it starts: VAULTD_* variables
(the master key, backend settings) and the cloud SDKs' AWS_* and AZURE_* credentials are taken
out for that moment so no worker ever has them.
"""

from __future__ import annotations

import ctypes
import io
import multiprocessing
import os
import threading
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from multiprocessing.context import ForkServerContext, ForkServerProcess, set_spawning_popen
from typing import Any

from render.sandbox.layers import SECRET_ENV_PREFIXES

# The worker: the process target and task entry points (which the server pickles by name), and
# every module they use; SciPy's modules besides, which the forensic code imports only where it
# uses them.
_PRELOAD = ["render.worker.entry_points", "render.worker.serve", "scipy.fft", "scipy.ndimage"]
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3
_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)


def context() -> ForkServerContext:
    """The fork-server context, its server started now if it is not running."""
    ctx = multiprocessing.get_context("forkserver")
    assert isinstance(ctx, ForkServerContext)
    with _lock:
        ctx.set_forkserver_preload(_PRELOAD)
        secrets = {k: v for k, v in os.environ.items() if k.startswith(SECRET_ENV_PREFIXES)}
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


class _Popen(popen_forkserver.Popen):
    """popen_forkserver.Popen._launch (CPython 3.11), without the main-module fix-up data."""

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)  # type: ignore[attr-defined]
        parent_w = os.dup(w)  # the child's sentinel of its parent, as in CPython
        self.finalizer = util.Finalize(
            self, util.close_fds, (parent_w, self.sentinel))  # type: ignore[attr-defined]
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class WorkerProcess(ForkServerProcess):
    """A process forked by the zygote."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _Popen(process_obj)

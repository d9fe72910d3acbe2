"""The zygote of `tests.vaultd_zygote` (its own process: `python -m tests.vaultd_zygote_server
SOCKET`): imports `vaultd.main` once, recording what the imports read of the environment,
checks that nothing in it a fork would copy half of, then forks a child per start it is sent;
the child takes the start's descriptors, environment, directory, umask and limits and runs
the start's module as `python -m` does. The zygote reaps each child and sends its exit
status back; it exits when its stdin (a pipe from the test process) ends."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

from tests.zygote_base import listening, receive_request, remove_socket_folder


def fork_hazards(own_fds: set[int]) -> list[str]:
    """What in this process a fork would copy half of: threads (Python's, and native ones
    still running after a fork), event loops, database clients, render pools, executors,
    child processes, and open descriptors other than `own_fds`."""
    hazards = [f"thread {thread.name}" for thread in threading.enumerate()
               if thread is not threading.main_thread()]
    probe = os.fork()  # a native library's pool stops itself at a fork, or is still there
    if probe == 0:
        os._exit(0)
    os.waitpid(probe, 0)
    if len(os.listdir("/proc/self/task")) > 1 + len(hazards):
        hazards.append("a native thread running over a fork")
    import asyncio
    import concurrent.futures

    kinds: list[type] = [asyncio.AbstractEventLoop, concurrent.futures.ThreadPoolExecutor,
                         concurrent.futures.ProcessPoolExecutor, subprocess.Popen]
    for module, names in (("pymongo", ("MongoClient", "AsyncMongoClient")),
                          ("render.pool.render_pool", ("RenderPool",))):
        if module in sys.modules:
            kinds += [getattr(sys.modules[module], name) for name in names]
    hazards += [f"a {type(thing).__name__}" for thing in gc.get_objects()
                if isinstance(thing, tuple(kinds))]
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed
        if fd not in own_fds:
            hazards.append(f"descriptor {fd} ({target})")
    return hazards


def _import_recording_reads(module: str) -> tuple[set[str], set[str]]:
    """Import `module`: the environment variables its imports read through `os.environ` by
    name, and the modules that copied all of it."""
    reads: set[str] = set()
    copiers: set[str] = set()
    environ = os.environ

    class Recording(os._Environ):  # type: ignore[name-defined,misc]  # os.environ's class
        listed = ""  # the name a copy has just listed, which it reads next

        def __iter__(self) -> Iterator[str]:
            frame = sys._getframe(1)
            while frame.f_globals.get("__name__") in ("os", "_collections_abc", "collections.abc"):
                frame = frame.f_back  # type: ignore[assignment]
            copiers.add(str(frame.f_globals.get("__name__")))
            for name in super().__iter__():
                self.listed = name
                yield name
            self.listed = ""

        def __getitem__(self, name: str) -> str:
            if name != self.listed:
                reads.add(name)
            return str(super().__getitem__(name))

        def __contains__(self, name: object) -> bool:
            reads.add(str(name))
            return bool(super().__contains__(name))

    # Sharing environ's data: a module that keeps the recording object sees every change.
    os.environ = Recording(  # noqa: B003 - a stand-in on the same data, not a new environment
        environ._data, environ.encodekey, environ.decodekey,  # type: ignore[attr-defined]
        environ.encodevalue, environ.decodevalue)  # type: ignore[attr-defined]
    try:
        __import__(module)
    finally:
        os.environ = environ  # noqa: B003 - the same object as before
    return reads, copiers


def _serve(path: str) -> tuple[dict[str, Any], list[int]] | None:
    """Serve starts until the test process is gone; in a forked child, return its start."""
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the test process's
    reads, copiers = _import_recording_reads("vaultd.main")
    listener = listening(path)
    hazards = fork_hazards({0, 1, 2, listener.fileno()})
    ready = {"reads": sorted(reads), "copiers": sorted(copiers), "hazards": hazards}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd: (pid, the start's connection)
    while True:
        readable, _, _ = select.select([listener, 0, *running], [], [])
        if 0 in readable and not os.read(0, 1):
            remove_socket_folder(path)
            return None
        for pidfd in set(readable) & running.keys():
            pid, conn = running.pop(pidfd)
            _, status = os.waitpid(pid, 0)
            os.close(pidfd)
            with contextlib.suppress(OSError):  # nobody waits for it any more
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            conn.close()
        if listener not in readable:
            continue
        conn, _ = listener.accept()
        request, fds = receive_request(conn, 3)  # stdin, stdout and stderr
        pid = os.fork()
        if pid == 0:
            listener.close()
            for pidfd, (_, other) in running.items():
                os.close(pidfd)
                other.close()
            conn.close()
            signal.signal(signal.SIGINT, interrupt)
            return request, fds
        pidfd = os.pidfd_open(pid)
        socket.send_fds(conn, [f"{pid}\n".encode()], [pidfd])
        for fd in fds:
            os.close(fd)
        running[pidfd] = (pid, conn)


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take the start's descriptors, environment, directory, umask and
    limits, then run its module as `python -m` does."""
    import multiprocessing
    import runpy

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.path[0] = os.getcwd()  # `-m` puts the working directory first
    os.umask(request["umask"])
    for name, limit in request["limits"].items():
        resource.setrlimit(getattr(resource, name), tuple(limit))
    multiprocessing.current_process().authkey = os.urandom(32)
    wsgi = sys.modules.get("wsgiref.handlers")  # its copy of the environment (read at import)
    if wsgi is not None:
        wsgi.BaseHandler.os_environ = wsgi.read_environ()
    sys.argv = ["-m", *request["args"]]
    sys.orig_argv = [sys.executable, "-m", request["module"], *request["args"]]
    # `-m` runs a module nothing has imported yet: the zygote's copy (`vaultd.main`) goes,
    # what it imported stays.
    package, _, name = request["module"].rpartition(".")
    if sys.modules.pop(request["module"], None) is not None and package:
        delattr(sys.modules[package], name)
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    child = _serve(sys.argv[1])
    if child is not None:
        _become(*child)  # its exit (a status, an exception, a signal) is the interpreter's

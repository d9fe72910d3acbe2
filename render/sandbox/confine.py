"""Confining a render worker, after its imports and before its first untrusted byte.

Order matters: namespaces need privileges the later layers take away (rlimits follow them); the uid
switch comes after the namespace (only root may create a network namespace without a user
namespace); no_new_privs precedes Landlock and seccomp (both require it unprivileged); seccomp
comes last since it forbids the Landlock calls. Every layer that cannot be applied is left out
and reported (the mask sent in READY); the server decides whether that is acceptable.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import site
import sys
import sysconfig

from render.sandbox import landlock, seccomp_filter
from render.sandbox.layers import SECRET_ENV_PREFIXES, Layer

_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 4, 38
_FIRST_WORKER_UID = 0x10000  # a worker runs as 65536 + its pid: no two workers share a uid
_MAX_OPEN_FILES = 64
_MAX_PROCESSES = 16  # threads count: the watermark helper and the cache reaper
_CPU_SECONDS = 3600  # a worker is recycled long before; this only stops a runaway loop

_libc = ctypes.CDLL(None, use_errno=True)


def confine(memory_limit: int) -> Layer:
    """Apply every layer this kernel and our privileges allow; return those now active."""
    readable = readable_paths()  # while the interpreter's files can still be listed
    active = Layer(0)
    if not any(name.startswith(SECRET_ENV_PREFIXES) for name in os.environ):
        active |= Layer.CLEAN_ENV
    active |= own_namespaces_and_identity()
    # After the user namespace: RLIMIT_NPROC set before it would also become the namespace's
    # cap on every process of vaultd's uid outside (the server's threads, other workers), so an
    # unprivileged vaultd's worker could not start a thread. Lowering a limit needs no privilege.
    # Without an identity of its own (no user namespace: a container run without vaultd's
    # seccomp profile) the limit would count vaultd's whole uid the same way, so it is not set:
    # the worker renders with the layers it has, and the missing one is reported.
    processes = _MAX_PROCESSES if Layer.OWN_IDENTITY in active else None
    if set_rlimits(memory_limit, _MAX_OPEN_FILES, processes, _CPU_SECONDS):
        active |= Layer.RLIMITS
    prctl(_PR_SET_DUMPABLE, 0)  # other workers and the server cannot read this one's memory
    if prctl(_PR_SET_NO_NEW_PRIVS, 1):
        active |= Layer.NO_NEW_PRIVS
        active |= _landlock(readable)
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            seccomp_filter.install()
            active |= Layer.SECCOMP
    return active


def prctl(option: int, value: int) -> bool:
    return int(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0)) == 0


def hard_limit(limit: int, value: int) -> None:
    _, hard = resource.getrlimit(limit)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(limit, (value, value))


def set_rlimits(memory_limit: int, open_files: int, processes: int | None,
                cpu_seconds: int) -> bool:
    """Hard limits on this process's address space (0: none), open files, processes (None:
    none) and CPU time, and no core dump; True when every one was set, the memory cap included.
    Shared by the render worker and the Office converter, which differ in the numbers only."""
    try:
        if memory_limit > 0:
            hard_limit(resource.RLIMIT_AS, memory_limit)
        hard_limit(resource.RLIMIT_NOFILE, open_files)
        if processes is not None:
            hard_limit(resource.RLIMIT_NPROC, processes)
        hard_limit(resource.RLIMIT_CPU, cpu_seconds)
        hard_limit(resource.RLIMIT_CORE, 0)
    except (OSError, ValueError):
        return False
    return memory_limit > 0


def _unshare(flags: int) -> bool:
    return int(_libc.unshare(ctypes.c_int(flags))) == 0


def own_uid() -> int:
    """The uid this process takes when vaultd runs as root: no two confined processes share one."""
    return _FIRST_WORKER_UID + os.getpid()


def own_namespaces_and_identity() -> Layer:
    """A new network namespace, and a uid of its own (as root) or a user namespace."""
    if os.geteuid() == 0:
        active = Layer.NET_NAMESPACE if _unshare(_CLONE_NEWNET) else Layer(0)
        uid = own_uid()
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        except OSError:
            return active
        return active | Layer.OWN_IDENTITY
    if _unshare(_CLONE_NEWUSER | _CLONE_NEWNET):
        return Layer.NET_NAMESPACE | Layer.OWN_IDENTITY
    return Layer.NET_NAMESPACE if _unshare(_CLONE_NEWNET) else Layer(0)


def readable_paths() -> list[str]:
    """What rendering may still read: the interpreter and its libraries, shared libraries,
    fonts and their configuration. Not the project's working directory, not /proc."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64",
             "/etc/fonts", "/etc/ld.so.cache", "/etc/localtime", "/dev/null", "/dev/urandom",
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}  # the render package
    paths.update(sysconfig.get_paths().values())
    paths.update(site.getsitepackages())
    return sorted(p for p in paths if p)


def _landlock(readable: list[str]) -> Layer:
    try:
        fs, net, scope = landlock.restrict(readable)
    except OSError:
        return Layer(0)
    return ((Layer.LANDLOCK_FS if fs else Layer(0)) | (Layer.LANDLOCK_NET if net else Layer(0))
            | (Layer.LANDLOCK_SCOPE if scope else Layer(0)))

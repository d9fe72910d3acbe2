"""Landlock through its three system calls (ctypes).

The `landlock` package on PyPI (1.0.0.dev5) was tried first: it only knows filesystem rights
(its ruleset struct has no `handled_access_net` or `scoped`), so it cannot deny TCP (ABI 4) or
scope signals and abstract sockets (ABI 6). The calls are small enough to make directly.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # x86-64 and arm64 alike
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | 1 << 14 | 1 << 15  # + TRUNCATE, IOCTL_DEV
_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_BY_ABI = {1: _FS_ABI1, 2: _FS_ABI1 | 1 << 13, 3: _FS_ABI1 | 3 << 13, 5: _FS_ABI1 | 7 << 13}
_NET_TCP = 1 | 2  # BIND_TCP | CONNECT_TCP, ABI 4
_SCOPE_ALL = 1 | 2  # ABSTRACT_UNIX_SOCKET | SIGNAL, ABI 6


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The running kernel's Landlock ABI, 0 when Landlock is off or unknown."""
    version = _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _fs_rights(abi: int) -> int:
    return _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= abi)]


def restrict(readable: Iterable[str]) -> tuple[bool, bool, bool]:
    """Allow reading (files and directories) under `readable` only, nothing else on the
    filesystem, no TCP, and no signal or abstract socket beyond this process's domain.

    Returns which of (filesystem, network, scope) is now enforced. The caller has set
    no_new_privs. OSError if the kernel refuses a call it claims to support.
    """
    return restrict_rules([(path, READ_FILE | READ_DIR) for path in readable])


def restrict_rules(rules: Iterable[tuple[str, int]], writable: Iterable[str] = ()) -> tuple[
        bool, bool, bool]:
    """As `restrict`, with each path's own rights (READ_DIR is dropped for a file) and every
    right under `writable` (the converter's job directory)."""
    abi = abi_version()
    if abi < 1:
        return (False, False, False)
    fs = _fs_rights(abi)
    attr = _Ruleset(fs, _NET_TCP if abi >= 4 else 0, _SCOPE_ALL if abi >= 6 else 0)
    size = ctypes.sizeof(_Ruleset) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, rights in rules:
            _allow(ruleset, path, rights)
        for path in writable:
            _allow(ruleset, path, fs)
        if _libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return (True, abi >= 4, abi >= 6)


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # absent on this machine: nothing to allow
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS  # a file's rule may name no directory right
        rule = _PathBeneath(rights, fd)
        if _libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                         ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)

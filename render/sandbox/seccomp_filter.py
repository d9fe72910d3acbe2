"""The worker's seccomp-bpf allow-list, through libseccomp (pyseccomp, ctypes).

Anything not listed fails with EPERM (not a kill: an unforeseen call in a library fails softly
and the render reports an error). Named refusals: every socket call (the channel is two pipes
opened before the filter), execve, ptrace, process_vm_*, mount, unshare, setns, bpf, keyctl,
kill/tgkill of any process but this one, and
ioctl beyond two read-only requests.
"""

from __future__ import annotations

import errno
import os

import pyseccomp as seccomp

_CLONE_THREAD = 0x00010000
# ioctl only to ask whether a descriptor is a terminal (isatty on opening a file) or how much a
# pipe holds: no device or terminal control (TIOCSTI and the like).
_IOCTL_ALLOWED = (0x5401, 0x541B)  # TCGETS, FIONREAD

# What CPython, glibc, PDFium, Pillow, libjpeg/libpng and the channel use once imports are done.
_ALLOWED = (
    "read", "write", "readv", "writev", "pread64", "pwrite64", "close", "lseek",
    "fstat", "newfstatat", "statx", "stat", "lstat", "openat", "open", "getdents64",
    "readlink", "readlinkat", "access", "faccessat", "faccessat2", "fcntl", "dup", "dup2",
    "dup3", "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "msync",
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "sched_yield",
    "sched_getaffinity", "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid",
    "getegid", "getgroups", "getrandom", "clock_gettime", "clock_getres", "gettimeofday",
    "time", "nanosleep", "clock_nanosleep", "rt_sigaction", "rt_sigprocmask",
    "rt_sigreturn", "sigaltstack", "poll", "ppoll", "select", "pselect6", "epoll_create1",
    "epoll_ctl", "epoll_wait", "epoll_pwait", "pipe2", "eventfd2", "exit", "exit_group",
    "getrusage", "getrlimit", "prlimit64", "sysinfo", "uname", "getcwd", "umask",
    "set_tid_address", "prctl", "restart_syscall", "membarrier", "fadvise64", "times",
)


def install() -> None:
    """Load the filter into this process (and threads it starts later); irreversible."""
    rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
    for name in _ALLOWED:
        try:
            rules.add_rule(seccomp.ALLOW, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a system call on this architecture
    rules.add_rule(seccomp.ALLOW, "clone",
                   seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, _CLONE_THREAD))
    # clone3's flags are behind a pointer a filter cannot read: ENOSYS makes glibc use clone.
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for request in _IOCTL_ALLOWED:
        rules.add_rule(seccomp.ALLOW, "ioctl", seccomp.Arg(1, seccomp.EQ, request))
    me = os.getpid()
    rules.add_rule(seccomp.ALLOW, "kill", seccomp.Arg(0, seccomp.EQ, me))
    rules.add_rule(seccomp.ALLOW, "tgkill", seccomp.Arg(0, seccomp.EQ, me))
    rules.load()

"""Confining the Office converter (LibreOffice), between its launcher's start and its exec.

LibreOffice cannot live under the render worker's allow-list (it forks, execs its own binary and
uses far more system calls), so its confinement is a deny-list on top of the same kernel layers:
an address-space limit, a network namespace and a uid of its own, no_new_privs, Landlock (read
and execute the LibreOffice install and system libraries, read fonts, write only its job
directory, no TCP) and seccomp refusing every socket but AF_UNIX and the calls that reach other
processes or the kernel's configuration. The layers are inherited across exec and fork.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os

import pyseccomp as seccomp

from render.sandbox import landlock
from render.sandbox.confine import own_namespaces_and_identity, own_uid, prctl, set_rlimits
from render.sandbox.layers import Layer

_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 4, 38
_AF_UNIX = 1
_libc = ctypes.CDLL(None, use_errno=True)
_MAX_OPEN_FILES = 1024
_MAX_PROCESSES = 256  # LibreOffice's threads, under the converter's own uid
_EXECUTABLE = ("/usr/lib/libreoffice", "/usr/bin", "/bin", "/usr/lib", "/lib", "/lib64",
               "/usr/lib64")
_READABLE = ("/usr/share", "/usr/local/share/fonts", "/etc/fonts", "/etc/ld.so.cache",
             "/etc/localtime", "/etc/libreoffice", "/var/lib/libreoffice",
             "/var/spool/libreoffice", "/var/cache/fontconfig", "/dev/urandom", "/dev/zero")
# Calls that reach beyond the converter: other processes, the kernel's configuration, new
# namespaces or privileges. Everything else LibreOffice may use.
_DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "bpf", "keyctl", "add_key", "request_key", "perf_event_open",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "userfaultfd", "io_uring_setup", "open_by_handle_at",
    "name_to_handle_at", "settimeofday", "clock_settime", "adjtimex", "sethostname",
    "setdomainname", "iopl", "ioperm", "quotactl", "fanotify_init", "move_mount",
    "fsopen", "fsmount", "open_tree", "mount_setattr",
    "setsid", "setpgid",  # no escape from the process group that the deadline kills
)


def confine_converter(job_dir: str, memory_limit: int, cpu_seconds: int) -> Layer:
    """Apply every layer this kernel and our privileges allow; return those now active."""
    active = Layer(0) if any(k.startswith("VAULTD_") for k in os.environ) else Layer.CLEAN_ENV
    tmp = os.path.join(job_dir, "tmp")
    as_root = os.geteuid() == 0
    if as_root:  # the mount before the uid switch; unprivileged, inside the user namespace
        _give_job_dir(job_dir, own_uid())
        _private_mounts(tmp)
    active |= own_namespaces_and_identity()
    if not as_root:
        _private_mounts(tmp)
    # After the user namespace (as in render.sandbox.confine): RLIMIT_NPROC set before it counts
    # every process of vaultd's uid outside, and LibreOffice could not fork once vaultd's
    # threads and workers passed it (measured: "ERROR 4 forking process" at 300 threads).
    # Without an identity of its own (no user namespace), not at all: it would count vaultd's
    # whole uid (`render.sandbox.confine`).
    processes = _MAX_PROCESSES if Layer.OWN_IDENTITY in active else None
    if set_rlimits(memory_limit, _MAX_OPEN_FILES, processes, cpu_seconds):
        active |= Layer.RLIMITS
    prctl(_PR_SET_DUMPABLE, 0)
    if prctl(_PR_SET_NO_NEW_PRIVS, 1):
        active |= Layer.NO_NEW_PRIVS
        active |= _landlock(job_dir)
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            _install_seccomp()
            active |= Layer.SECCOMP
    return active


def _give_job_dir(job_dir: str, uid: int) -> None:
    # The converter's uid is known only now (it is derived from the pid): the job directory,
    # made by the server, becomes its own before the uid switch.
    for root, dirs, files in os.walk(job_dir):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, uid, uid)


def _private_mounts(tmp: str) -> None:
    # LibreOffice's single-instance pipe is a socket in /tmp whatever TMPDIR says: in a mount
    # namespace of its own, /tmp is the job's tmp directory (so /tmp itself stays unwritable).
    # Landlock does not govern connecting to a named socket, and AF_UNIX sockets are allowed:
    # the host's sockets in /tmp and /run (D-Bus, container runtimes) are hidden by the mounts.
    if not _unshare_mounts():
        return
    ms_rdonly, ms_nosuid, ms_nodev, ms_noexec = 1, 2, 4, 8
    ms_rec, ms_private, ms_bind = 0x4000, 1 << 18, 0x1000
    if _libc.mount(None, b"/", None, ms_rec | ms_private, None) == 0:
        _libc.mount(tmp.encode(), b"/tmp", None, ms_bind, None)
        _libc.mount(b"none", b"/run", b"tmpfs", ms_rdonly | ms_nosuid | ms_nodev | ms_noexec,
                    b"size=4k")


def _unshare_mounts() -> bool:
    return int(_libc.unshare(ctypes.c_int(0x00020000))) == 0  # CLONE_NEWNS


def _landlock(job_dir: str) -> Layer:
    run = landlock.EXECUTE | landlock.READ_FILE | landlock.READ_DIR
    read = landlock.READ_FILE | landlock.READ_DIR
    rules = [(path, run) for path in _EXECUTABLE] + [(path, read) for path in _READABLE]
    rules.append(("/dev/null", landlock.READ_FILE | landlock.WRITE_FILE))
    try:
        fs, net, scope = landlock.restrict_rules(rules, writable=[job_dir, "/tmp"])
    except OSError:
        return Layer(0)
    return ((Layer.LANDLOCK_FS if fs else Layer(0)) | (Layer.LANDLOCK_NET if net else Layer(0))
            | (Layer.LANDLOCK_SCOPE if scope else Layer(0)))


def _install_seccomp() -> None:
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in _DENIED:
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    # Only local sockets (LibreOffice's own pipe): no inet, netlink, packet or vsock socket.
    rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket",
                   seccomp.Arg(0, seccomp.NE, _AF_UNIX))
    tiocsti = 0x5412  # pushing input into a terminal
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "ioctl", seccomp.Arg(1, seccomp.EQ, tiocsti))
    rules.load()

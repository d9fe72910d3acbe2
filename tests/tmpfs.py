"""A small tmpfs the test mounts (the suite runs as root, as CI does), and a way to fill it: a
really full filesystem, not a simulated one."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BLOCK = 64 << 10


@contextmanager
def mounted_tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """`mount` (created if need be) as a tmpfs of `size` (`600k`, `128m`) for the block."""
    mount.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                   check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path, leave: int = 0) -> Path:
    """Fill the filesystem of `directory` with one file until writes fail, then give back
    `leave` bytes (tmpfs frees a truncated file's pages). Returns the filler: delete it to
    free the space."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * BLOCK)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize

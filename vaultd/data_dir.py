"""The data directory is vaultd's alone: 0700, and every file in it 0600.

The umask is set before anything is created, so vaultd, its render workers and the embedded
database (child processes inherit it) create private files. At start, if the directory was open
to others, the tree is checked and whatever vaultd owns that others could read is fixed, with one
warning that says how much.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("vaultd")

PRIVATE_UMASK = 0o077


def secure(path: Path) -> int:
    """Create `path` 0700 if missing, set the umask, fix modes; returns how many were fixed."""
    os.umask(PRIVATE_UMASK)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    fixed = _fix(path, 0o700)
    # Inside a private directory nothing is reachable by other users, so the tree (every blob)
    # is walked only when the directory itself was open, as after an upgrade from an older vaultd.
    if fixed or stat.S_IMODE(path.stat().st_mode) & 0o077:
        fixed += _fix_tree(path)
    if fixed:
        log.warning("data directory %s: %d files or directories were readable by other users; "
                    "made private (0600 files, 0700 directories)", path, fixed)
    return fixed


def _fix_tree(root: Path) -> int:
    fixed = 0
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            fixed += _fix(Path(folder, name), 0o700)
        for name in files:
            fixed += _fix(Path(folder, name), 0o600)
    return fixed


def _fix(path: Path, private_mode: int) -> int:
    try:
        info = path.lstat()
    except OSError:
        return 0
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        return 0  # not ours to change (an operator's symlink or file)
    if stat.S_IMODE(info.st_mode) & 0o077 == 0:
        return 0
    os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077 & 0o7777 | (private_mode & 0o700))
    return 1

"""Key files on disk: written atomically with mode 0600, checked for loose permissions."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


def permission_warnings(path: Path, mode: int) -> tuple[str, ...]:
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        warning = (f"master key file {path} is accessible to group/other "
                   f"(mode {stat.S_IMODE(mode):04o}); run: chmod 600 {path}")
        return (warning,)
    return ()


def write_atomic(path: Path, text: str, *, replace: bool) -> None:
    """Write a 0600 temp file beside `path`, fsync, then publish it under `path`.

    replace=False publishes with link(), which fails with FileExistsError instead of
    overwriting a key file another process just created.
    """
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(6)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            publish_new(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def publish_new(tmp: Path, path: Path) -> None:
    """Give `tmp` the name `path` unless `path` exists (FileExistsError)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        # Filesystem without hard links: best effort (a tiny race instead of none).
        if path.exists():
            raise FileExistsError(path) from None
        os.rename(tmp, path)


def fsync_dir(directory: Path) -> None:
    # Make the rename/link itself durable; not every platform/filesystem allows it.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

"""Room left on the embedded database's disk, checked before an upload starts.

WiredTiger cannot live with a full disk: a journal write that finds no room panics the
storage engine, and every later command fails until the database is restarted. Uploads are
therefore refused (503, nothing stored) while the disk holding `<data_dir>/db` has less than
`DB_RESERVE_BYTES` free, which leaves the reserve to what pages, links and the access log
write, so files already stored keep being served. A configured `mongodb.uri` lives on another
machine's disk, which its own operator watches: nothing is checked then.
"""

from __future__ import annotations

import os
from pathlib import Path

from vaultd.config import Settings
from vaultd.errors import ServiceUnavailable

# More than one WiredTiger journal file (10 MB) and a checkpoint's worth of small records.
DB_RESERVE_BYTES = 64 << 20
DB_FULL = "database storage is full; retry later"
RETRY_AFTER_SECONDS = 60


def embedded_db_dir(settings: Settings) -> Path | None:
    return None if settings.mongodb_uri else settings.data_path / "db"


def free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def check_database_room(directory: Path | None) -> None:
    """ServiceUnavailable when the embedded database in `directory` is short of room (one
    statvfs; None: the database is not ours to watch)."""
    if directory is None:
        return
    try:
        free = free_bytes(directory)
    except OSError:
        return  # not there (yet): the database's own errors say what is wrong
    if free < DB_RESERVE_BYTES:
        raise ServiceUnavailable(DB_FULL, retry_after=RETRY_AFTER_SECONDS)

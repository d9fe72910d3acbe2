"""Room left on the embedded database's disk, checked before an upload starts.

WiredTiger cannot live with a full disk: a journal write that finds no room panics the
storage engine, and every later command fails until the database is restarted. Uploads are
therefore refused (503, nothing stored) while the disk holding `<data_dir>/db` has less than
`DB_RESERVE_BYTES` free, beyond what the upload itself will write there when the local blobs
share that disk (as `<data_dir>/blobs` does). The reserve is left to what pages, links and the
access log write, so files already stored keep being served. A configured `mongodb.uri` lives
on another machine's disk, which its own operator watches: nothing is checked then.
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


def check_database_room(settings: Settings, upload_size: int | None) -> None:
    """ServiceUnavailable when the embedded database's disk is short of room (a statvfs and,
    for local blobs, two stats)."""
    if settings.mongodb_uri:
        return
    directory = settings.data_path / "db"
    try:
        free = _free_bytes(directory)
        shared = settings.storage_backend == "local" and _same_disk(
            directory, settings.local_blob_dir)
    except OSError:
        return  # not there (yet): the database's own errors say what is wrong
    incoming = (upload_size or 0) if shared else 0
    if free - incoming < DB_RESERVE_BYTES:
        raise ServiceUnavailable(DB_FULL, retry_after=RETRY_AFTER_SECONDS)


def _free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def _same_disk(one: Path, other: Path) -> bool:
    return os.stat(one).st_dev == os.stat(other).st_dev

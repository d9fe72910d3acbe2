"""What `vault-admin doctor` checks of a vault besides its sandbox: the database answers, the
disks have room, the master key file is private, and a backup was made lately.

Each check is a `Finding`: `ok`, a `warning` (worth acting on, the vault works), or a `problem`
(the vault is at risk now); the doctor exits 1 on a problem. The newest backup is the one
`vault-admin backup` recorded when it finished (`record_backup`, collection `backup_runs`):
a backup copied elsewhere by other means is not known.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.services.storage.db_room import DB_RESERVE_BYTES
from vaultd.timefmt import iso_utc, utcnow

Verdict = Literal["ok", "warning", "problem"]
BACKUP_RUNS = "backup_runs"
NEWEST = "newest"
# A week without a backup loses a week of uploads and access logs with the disk.
BACKUP_AGE_LIMIT = timedelta(days=7)
# Below the reserve uploads are refused (`db_room`); below ten reserves it is time to act.
LOW_DISK_BYTES = 10 * DB_RESERVE_BYTES


@dataclass(frozen=True)
class Finding:
    name: str
    verdict: Verdict
    detail: str


async def record_backup(db: Db, dest: Path, finished_at: datetime) -> None:
    """Noted by `vault-admin backup` once its manifest is written."""
    await db.raw(BACKUP_RUNS).update_one(
        {"_id": NEWEST}, {"$set": {"finishedAt": finished_at, "dest": str(dest.resolve())}},
        upsert=True)


async def check_vault(settings: Settings, db: Db) -> list[Finding]:
    return [await _database(db), *_disks(settings), _key_file(settings), await _backup(db)]


async def _database(db: Db) -> Finding:
    try:
        await db.database.command("ping")
        files = await db.files.estimated_document_count()
    except Exception as error:  # any failure is the finding itself
        return Finding("database", "problem", f"does not answer: {type(error).__name__}")
    return Finding("database", "ok", f"answers ({files} file records)")


def _disks(settings: Settings) -> list[Finding]:
    places = {"data directory": settings.data_path}
    if not settings.mongodb_uri:
        places["embedded database"] = settings.data_path / "db"
    findings, seen = [], set()
    for name, path in places.items():
        if not path.exists():
            continue
        device = os.stat(path).st_dev
        if device in seen:  # the same disk: said once
            continue
        seen.add(device)
        free = shutil.disk_usage(path).free
        said = f"{free / 2**30:.1f} GiB free at {path}"
        if free < DB_RESERVE_BYTES:
            findings.append(Finding(f"disk ({name})", "problem",
                                    said + ": uploads are refused below 64 MiB"))
        elif free < LOW_DISK_BYTES:
            findings.append(Finding(f"disk ({name})", "warning", said + ": running low"))
        else:
            findings.append(Finding(f"disk ({name})", "ok", said))
    return findings


def _key_file(settings: Settings) -> Finding:
    if settings.master_key_value:
        return Finding("master key", "ok", "from VAULTD_MASTER_KEY (the environment), no file")
    path = settings.master_key_path
    if not path.is_file():
        return Finding("master key", "problem", f"{path} is missing")
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        return Finding("master key", "problem",
                       f"{path} has mode {mode:o}: others may read it (chmod 600 {path})")
    return Finding("master key", "ok", f"{path}, mode {mode:o}")


async def _backup(db: Db) -> Finding:
    newest = await db.raw(BACKUP_RUNS).find_one({"_id": NEWEST})
    if newest is None:
        return Finding("backup", "warning", "none recorded (vault-admin backup DEST)")
    finished: datetime = newest["finishedAt"]
    age = utcnow() - finished
    said = f"newest finished {iso_utc(finished)} ({_age(age)} ago) in {newest['dest']}"
    if age > BACKUP_AGE_LIMIT:
        return Finding("backup", "warning", said + ": older than a week")
    return Finding("backup", "ok", said)


def _age(age: timedelta) -> str:
    if age >= timedelta(days=2):
        return f"{age.days} days"
    if age >= timedelta(hours=2):
        return f"{int(age.total_seconds() // 3600)} hours"
    return f"{max(int(age.total_seconds() // 60), 0)} minutes"

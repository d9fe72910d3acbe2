"""Credentials of the embedded database: generated at first start, kept 0600, never logged.

SecantusDB listens on a loopback TCP port (it has no Unix-socket listener) and supports
SCRAM-SHA-256 with `--auth`. Without it any local user could read file names and viewer
emails, or insert an API-key hash. vaultd therefore creates one `root` user with a random
password at first start (the server runs once without `--auth` for that, bound to loopback on
a fresh port, and any other user found then is dropped), then always runs it with `--auth`.
The password lives only in `<data_dir>/db-credentials.json`, mode 0600, which `vault-admin`
and the tests read too.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote

FILE_NAME = "db-credentials.json"
USER = "vaultd"


@dataclass(frozen=True)
class DbCredentials:
    user: str
    password: str
    provisioned: bool  # the user exists in the database's store

    def uri_userinfo(self) -> str:
        return f"{quote(self.user, safe='')}:{quote(self.password, safe='')}@"

    def __repr__(self) -> str:  # never print the password, whatever prints this
        return f"DbCredentials(user={self.user!r}, provisioned={self.provisioned})"


def credentials_path(storage: Path) -> Path:
    return storage.parent / FILE_NAME


def read(storage: Path) -> DbCredentials | None:
    try:
        info = json.loads(credentials_path(storage).read_text())
        return DbCredentials(str(info["user"]), str(info["password"]), bool(info["provisioned"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load_or_create(storage: Path) -> DbCredentials:
    existing = read(storage)
    if existing is not None:
        return existing
    created = DbCredentials(USER, secrets.token_urlsafe(32), provisioned=False)
    write(storage, created)
    return created


def write(storage: Path, credentials: DbCredentials) -> None:
    """Atomically, created 0600 from the start (never readable by others, even briefly)."""
    path = credentials_path(storage)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(credentials), f)
    os.replace(tmp, path)

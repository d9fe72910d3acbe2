"""What vaultd tells the operator who started it, on its standard output beside "listening on"
(and in its log): the lines a first start needs read, not the log's detail."""

from __future__ import annotations

import logging

from pymongo.errors import PyMongoError

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.runtime import KeyringSource

log = logging.getLogger("vaultd")

FIRST_ADMIN = "vault-admin members add-first-admin <your email>"


def tell(message: str) -> None:
    print(f"vaultd: {message}", flush=True)


def announce_new_key(settings: Settings, keyrings: KeyringSource) -> None:
    if not keyrings.created:
        return
    message = (f"generated a new master key at {settings.master_key_path.resolve()}: back it up "
               "now, apart from the database; losing it loses every file "
               "(vault-admin master-key show-path shows where it is)")
    log.warning(message)
    tell(message)


async def announce_console(settings: Settings, port: int, db: Db) -> None:
    """Where the console is and, on a vault that has no account yet (a first start), the one
    command that makes its first admin: nobody can sign in before it runs. The link it prints
    is a credential, so it is made there (in the operator's terminal), never printed here."""
    # The address links are made with (`public_url`, else this host and port), as the
    # sign-in link `vault-admin` prints will be.
    message = f"the console is at {settings.viewer_url(port).rstrip('/')}/console"
    try:
        first_start = await db.accounts.find_one({}, {"_id": 1}) is None
    except PyMongoError:  # only a hint: the database's outage is reported where it is used
        first_start = False
    if first_start:
        message += (f"; this vault has no account yet: make yourself its first admin with "
                    f"`{FIRST_ADMIN}`, which prints a one-time sign-in link")
    log.info(message)
    tell(message)

"""What vaultd tells the operator who started it, on its standard output beside "listening on"
(and in its log): the lines a first start needs read, not the log's detail."""

from __future__ import annotations

import logging

from pymongo.errors import PyMongoError

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.runtime import KeyringSource
from vaultd.services.accounts import accounts

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


async def no_account_yet(db: Db) -> bool:
    """Whether the vault has no account, so nobody can sign in yet. Read before vaultd listens:
    the console's line is then printed with "listening on", and no read is added after it
    (a stop sent once vaultd answers waits only for the start's own steps)."""
    try:
        return not await accounts.any_account(db)
    except PyMongoError:  # only a hint: the database's outage is reported where it is used
        return False


def announce_console(settings: Settings, port: int, no_account: bool) -> None:
    """Where the console is and, on a vault that has no account yet (a first start), the one
    command that makes its first admin. The link that command prints is a credential, so it
    is made there (in the operator's terminal), never printed here."""
    # The address links are made with (`public_url`, else this host and port), as the
    # sign-in link `vault-admin` prints will be.
    message = f"the console is at {settings.viewer_url(port).rstrip('/')}/console"
    if no_account:
        message += (f"; this vault has no account yet: make yourself its first admin with "
                    f"`{FIRST_ADMIN}`, which prints a one-time sign-in link")
    log.info(message)
    tell(message)

"""What vaultd tells the operator who started it, on its standard output beside "listening on"
(and in its log): the lines a first start needs read, not the log's detail."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

from pymongo.errors import PyMongoError

from vaultd.config import ConfigError, Settings, load_settings, read_config_file
from vaultd.db import Db
from vaultd.runtime import KeyringSource
from vaultd.services.accounts import accounts

log = logging.getLogger("vaultd")

FIRST_ADMIN = "members add-first-admin <your email>"


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


def announce_console(settings: Settings, port: int, no_account: bool,
                     config_path: str | None = None) -> None:
    """Where the console is and, on a vault that has no account yet (a first start), the one
    command that makes its first admin. The link that command prints is a credential, so it
    is made there (in the operator's terminal), never printed here."""
    # The address links are made with (`public_url`, else this host and port), as the
    # sign-in link `vault-admin` prints will be.
    message = f"the console is at {settings.viewer_url(port).rstrip('/')}/console"
    if no_account:
        message += (f"; this vault has no account yet: make yourself its first admin with "
                    f"`{first_admin_command(settings, port, config_path)}`, which prints a "
                    "one-time sign-in link")
    log.info(message)
    tell(message)


def first_admin_command(settings: Settings, port: int, config_path: str | None) -> str:
    """`vault-admin members add-first-admin` as it must be typed to reach this vault and make
    its link to this address from any shell in the directory vaultd started in: what vaultd
    took from its command line or its environment (another port, data directory or public
    address, the config file) is spelled out, since `vault-admin` sees neither. The quick
    start's vaultd, on the defaults, gets the plain command. A database URI is never printed
    (it may hold a password): a deployment that sets one sets it for both tools."""
    try:  # read at the start already: only an edit since could fail it, not worth a stop
        from_file = read_config_file(config_path) if config_path else {}
        plain = load_settings(from_file, env={})
    except ConfigError:
        plain = load_settings({}, env={})  # then more is spelled out than needed, not less
    words: list[str] = []
    if settings.viewer_url(port) != plain.viewer_url():
        if settings.public_url:
            words.append(f"VAULTD_PUBLIC_URL={shlex.quote(settings.public_url)}")
        else:
            if settings.viewer_url(port) != plain.viewer_url(port):  # the host tells
                words.append(f"VAULTD_HOST={shlex.quote(settings.host)}")
            if port != plain.port:
                words.append(f"VAULTD_PORT={port}")
    words.append("vault-admin")
    if config_path:
        words += ["--config", shlex.quote(str(Path(config_path).resolve()))]
    if settings.data_path.resolve() != plain.data_path.resolve():
        words += ["--data-dir", shlex.quote(str(settings.data_path.resolve()))]
    return " ".join([*words, FIRST_ADMIN])

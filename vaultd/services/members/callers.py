"""The caller of an API request, as an `Actor`: today an API key (the sessions of signed-in
members resolve to an Actor the same way, with their member record's role)."""

from __future__ import annotations

from vaultd.db import Db
from vaultd.errors import INVALID_KEY, NotFound, Unauthorized
from vaultd.services.accounts.accounts import Account, get_account
from vaultd.services.accounts.api_keys import KeyCheck, check_key
from vaultd.services.members.actor import Actor
from vaultd.services.members.roles import Role


def key_actor(check: KeyCheck) -> Actor:
    """The actor of a live key: its role (a key made before keys had roles: admin)."""
    return Actor(account_id=check.owner, role=Role(check.role), kind="key", id=check.key_id,
                 label=check.label)


async def key_caller(db: Db, key: str) -> tuple[Account, Actor]:
    """The account and actor of a live key; Unauthorized (INVALID_KEY) for any other key."""
    check = await check_key(db, key)
    try:
        account = await get_account(db, check.owner)
    except NotFound:
        raise Unauthorized(INVALID_KEY) from None
    return account, key_actor(check)

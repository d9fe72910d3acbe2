"""The caller of a request, as an `Actor` (an API key here; the sessions of signed-in members
resolve to an Actor the same way, with their member record's role), and that caller held to its
role by the services themselves.

The web layer checks each route's declared permission before its handler runs
(`web.permissions`). The services that change an account's content, trace for it or manage it
check again, at their first line (`require_caller`), so that a route declared too leniently, a
new handler calling a service, or a console form reaching a service another way cannot take a
role past what it holds: the role is enforced where the change is made, not only where it is
asked for. The web layer sets the caller once it is known (`set_caller`). Outside a request
(vault-admin, which acts as the operator; recovery and background steps, which finish what a
permitted call began) no caller is set and nobody is held to a role. A contextvar is per
request: Tornado runs each request in its own task, which copies the context it starts in."""

from __future__ import annotations

from contextvars import ContextVar

from vaultd.db import Db
from vaultd.errors import INVALID_KEY, NotFound, Unauthorized
from vaultd.services.accounts.accounts import Account, get_account
from vaultd.services.accounts.api_keys import KeyCheck, check_key
from vaultd.services.members.actor import Actor
from vaultd.services.members.roles import Permission, Role

CALLER: ContextVar[Actor | None] = ContextVar("caller", default=None)


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


def set_caller(actor: Actor | None) -> None:
    CALLER.set(actor)


def require_caller(permission: Permission) -> None:
    """Refuse (403, naming the role) when the request's caller may not do this."""
    actor = CALLER.get()
    if actor is not None:
        actor.require(permission)

"""The API for signed-in members: every `/v1/...` route served again at `/console/api/...` by
the same handler, its caller the session's member instead of an API key.

The mirror is made from the routes themselves (`mirror(all_routes())` in `make_app`): a new
`/v1` route is served here without a line of code. Each mirrored handler is the route's own
class with `SessionApiMixin` in front, which replaces only how the caller is found: the
session cookie (live, its member active at the epoch it was opened under, its account there),
the Origin and CSRF checks of an unsafe request, then the account and the `Actor` (kind
"member", the member's role) the handler and the role checks read.

Left out: routes that need no key (`public`), and the two page routes, whose page path checks
the API key itself in the read of the link (`deferred_auth`)."""

from __future__ import annotations

from vaultd.errors import Forbidden
from vaultd.services.accounts.accounts import Account
from vaultd.services.members.actor import Actor
from vaultd.web.base import BaseHandler
from vaultd.web.console_session import SessionHandlerMixin

API_PREFIX, MIRROR_PREFIX = "/v1/", "/console/api/"
CHOOSE_ACCOUNT = "choose an account first: POST /console/auth/account"


class SessionApiMixin(SessionHandlerMixin):
    def bearer_key(self) -> str:
        raise AssertionError("a session's request carries no API key")  # never mirrored

    async def authenticate_caller(self) -> tuple[Account, Actor]:
        """The session's account and member: the role checks of `BaseHandler.prepare` then
        hold the member to the route's permission exactly as they hold an API key."""
        signed_in = await self.require_session()
        actor, account = signed_in.actor, signed_in.account
        if actor is None or account is None:
            raise Forbidden(CHOOSE_ACCOUNT)
        return Account.from_doc(account), actor

    async def authenticate(self) -> Account:
        account, _ = await self.authenticate_caller()
        return account


def api_pattern(pattern: str) -> str:
    """The `/v1` route a mirrored pattern serves again (itself for any other)."""
    if pattern.startswith(MIRROR_PREFIX):
        return API_PREFIX + pattern[len(MIRROR_PREFIX):]
    return pattern


def mirror(routes: list[tuple[str, type]]) -> list[tuple[str, type]]:
    """The session-authenticated twin of each key-authenticated `/v1` route."""
    mirrored: list[tuple[str, type]] = []
    for pattern, handler in routes:
        if (not pattern.startswith(API_PREFIX) or not issubclass(handler, BaseHandler)
                or handler.public or handler.deferred_auth):
            continue
        twin = type(f"Session{handler.__name__}", (SessionApiMixin, handler),
                    {"__module__": __name__})
        mirrored.append((MIRROR_PREFIX + pattern[len(API_PREFIX):], twin))
    return mirrored

"""GET /v1/account."""

from __future__ import annotations

from vaultd.services.accounts.accounts import account_json
from vaultd.web.base import BaseHandler
from vaultd.web.permissions import READ


class AccountHandler(BaseHandler):
    async def get(self) -> None:
        assert self.account is not None
        self.send_json(200, await account_json(self.ctx.db, self.account))


ROUTES = [(r"/v1/account", AccountHandler)]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/account": {"GET": READ},
}

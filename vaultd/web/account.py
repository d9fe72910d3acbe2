"""GET /v1/account."""

from __future__ import annotations

from vaultd.services.accounts.accounts import account_json
from vaultd.web.base import BaseHandler


class AccountHandler(BaseHandler):
    async def get(self) -> None:
        assert self.account is not None
        self.send_json(200, await account_json(self.ctx.db, self.account))


ROUTES = [(r"/v1/account", AccountHandler)]

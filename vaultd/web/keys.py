"""An account's API keys over HTTP: list (never a key), create (the key shown once), revoke."""

from __future__ import annotations

from vaultd.services.members import keys
from vaultd.services.members.members import parse_name, parse_role
from vaultd.services.members.roles import Role
from vaultd.web.members import MembersBase
from vaultd.web.permissions import MANAGE, READ


class KeysHandler(MembersBase):
    async def get(self) -> None:
        assert self.account is not None
        found = await keys.list_keys(self.ctx.db, self.account.id)
        self.send_json(200, {"keys": [keys.key_json(info) for info in found]})

    async def post(self) -> None:
        assert self.actor is not None
        body = self.json_body()
        role = parse_role(body["role"]) if "role" in body else Role.ADMIN
        name = parse_name(body.get("name", ""))
        info, key = await keys.create(self.ctx.db, self.actor, name=name, role=role,
                                      ip=self.caller_ip())
        self.send_json(201, {**keys.key_json(info), "key": key})


class KeyHandler(MembersBase):
    async def delete(self, key_id: str) -> None:
        assert self.actor is not None
        await keys.revoke(self.ctx.db, self.actor, key_id, ip=self.caller_ip())
        self.send_empty(204)


ROUTES = [
    (r"/v1/keys", KeysHandler),
    (r"/v1/keys/([^/]+)", KeyHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/keys": {"GET": READ, "POST": MANAGE},
    r"/v1/keys/([^/]+)": {"DELETE": MANAGE},
}

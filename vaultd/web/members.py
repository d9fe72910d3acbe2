"""An account's members over HTTP: list, add (invite), change a role, remove."""

from __future__ import annotations

from vaultd.services.members import members
from vaultd.web.base import BaseHandler
from vaultd.web.client_ip import viewer_ip
from vaultd.web.permissions import MANAGE, READ


class MembersBase(BaseHandler):
    def caller_ip(self) -> str | None:
        return viewer_ip(self.request, self.ctx.settings.proxy_trusted)


class MembersHandler(MembersBase):
    async def get(self) -> None:
        assert self.account is not None
        found = await members.list_members(self.ctx.db, self.account.id)
        self.send_json(200, {"members": [members.member_json(doc) for doc in found]})

    async def post(self) -> None:
        assert self.actor is not None
        body = self.json_body()
        role = members.parse_role(body.get("role"))
        email = members.parse_email(body.get("email"))
        doc = await members.add_member(self.ctx.db, self.actor, email, role=role,
                                       name=members.parse_name(body.get("name", "")),
                                       ip=self.caller_ip())
        self.send_json(201, members.member_json(doc))


class MemberHandler(MembersBase):
    async def patch(self, member_id: str) -> None:
        assert self.actor is not None
        role = members.parse_role(self.json_body().get("role"))
        doc = await members.set_role(self.ctx.db, self.actor, member_id, role,
                                     ip=self.caller_ip())
        self.send_json(200, members.member_json(doc))

    async def delete(self, member_id: str) -> None:
        assert self.actor is not None
        await members.remove_member(self.ctx.db, self.actor, member_id, ip=self.caller_ip())
        self.send_empty(204)


ROUTES = [
    (r"/v1/members", MembersHandler),
    (r"/v1/members/([^/]+)", MemberHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/members": {"GET": READ, "POST": MANAGE},
    r"/v1/members/([^/]+)": {"PATCH": MANAGE, "DELETE": MANAGE},
}

"""GET and PUT /v1/notifications: what the signed-in member is mailed about (their links' first
opens, a daily digest). A member's own choice: an API key has no mailbox, so a key is refused."""

from __future__ import annotations

from vaultd.errors import Conflict, Forbidden
from vaultd.services.notifications import prefs
from vaultd.web.base import BaseHandler

NOT_A_MEMBER = "notifications are a member's: sign in to the console to choose yours"
NO_MAIL = "this server sends no mail (smtp.host is not set): notifications cannot be sent"


class NotificationsHandler(BaseHandler):
    def _member_id(self) -> str:
        assert self.actor is not None
        if self.actor.kind != "member":
            raise Forbidden(NOT_A_MEMBER)
        return self.actor.id

    async def get(self) -> None:
        member_id = self._member_id()
        self.send_json(200, await prefs.read(self.ctx.db, member_id))

    async def put(self) -> None:
        assert self.account is not None
        member_id = self._member_id()
        wanted = prefs.parse(self.json_body())
        if any(wanted.values()) and not self.ctx.settings.smtp_host:
            raise Conflict(NO_MAIL)
        self.send_json(200, await prefs.change(self.ctx.db, self.account.id, member_id, wanted))


ROUTES = [(r"/v1/notifications", NotificationsHandler)]

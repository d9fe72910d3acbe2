"""Viewer sessions over the API (Option B): open one for a gated link, then pass its gates.
The proxy sends the session id back on pages as `x-viewer-session`."""

from __future__ import annotations

from vaultd.services.gates import actions, sessions
from vaultd.services.gates.actions import Reader
from vaultd.services.links import OpenLink
from vaultd.web.views import ViewerIpMixin


class ApiReaderMixin(ViewerIpMixin):
    def reader(self) -> Reader:
        agent = self.request.headers.get("x-viewer-user-agent", "")[:300] or None
        return Reader(self.viewer_ip(), agent)

    async def own_link(self, token: str) -> OpenLink:
        assert self.account is not None
        return await self.ctx.pages.open_link(token, self.account)


class OpenSessionHandler(ApiReaderMixin):
    async def post(self, token: str) -> None:
        opened = await self.own_link(token)
        session_id, pending = await actions.open_session(self.ctx.db, opened, self.reader())
        self.send_json(201, {"sessionId": session_id, "pending": pending})


class SessionActionHandler(ApiReaderMixin):
    async def post(self, token: str, session_id: str, action: str) -> None:
        opened = await self.own_link(token)
        session = await sessions.session_of(self.ctx.db, session_id, opened.link)
        body = self.json_body()
        db, reader = self.ctx.db, self.reader()
        if action == "passcode":
            pending = await actions.give_passcode(db, opened, session, body.get("passcode"),
                                                  reader)
        else:
            pending = await actions.accept_agreement(db, opened, session, body.get("name"),
                                                     reader)
        self.send_json(200, {"pending": pending})


ROUTES = [
    (r"/v1/views/([^/]+)/sessions", OpenSessionHandler),
    (r"/v1/views/([^/]+)/sessions/([^/]+)/(passcode|agreement)", SessionActionHandler),
]

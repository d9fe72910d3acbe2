"""Viewer sessions over the API (Option B): open one for a gated link, then pass its gates.
The proxy sends the session id back on pages as `x-viewer-session`. File links under
`/v1/views/:token/sessions`, room links under `/v1/room-views/:token/sessions`: the same
handlers and the same gate code (`services.gates`), on a `GatedLink`. `act` is the four
actions, shared with the hosted viewer (`web.viewer_gates`). Each action that succeeds answers
the session's new `sessionId`: the one in its URL has ended."""

from __future__ import annotations

from typing import Any

from vaultd.errors import ServiceUnavailable
from vaultd.records import ViewerSessionDoc
from vaultd.services.gates import actions, gated, sessions
from vaultd.services.gates.actions import Reader
from vaultd.services.gates.check import Gates
from vaultd.services.gates.codes import EmailCodes
from vaultd.services.gates.gated import GatedLink
from vaultd.services.rooms import reads
from vaultd.web.context import AppContext
from vaultd.web.views import ViewerIpMixin


class ApiReaderMixin(ViewerIpMixin):
    rooms = False  # True: the token is a room link's (`/v1/room-views/...`)

    def reader(self) -> Reader:
        agent = self.request.headers.get("x-viewer-user-agent", "")[:300] or None
        return Reader(self.viewer_ip(), agent)

    async def own_link(self, token: str) -> GatedLink:
        """The live link of this token, the key's account's; NotFound otherwise."""
        assert self.account is not None
        if self.rooms:
            link, room, account = await reads.open_room(self.ctx.db, token, self.account.id)
            return gated.room_link(link, room, account)
        return gated.file_link(await self.ctx.pages.open_link(token, self.account))


async def act(ctx: AppContext, reader: Reader, link: GatedLink, session: ViewerSessionDoc,
              action: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """One of a session's four actions, shared by the API and the hosted viewer: (status,
    body, the session's new id). Every action that succeeds renews the id, so an id known
    before (planted, or seen) ends as the reader passes a gate with it."""
    renewed: str | None = None
    if action == "code":
        status, answer = 202, await mail_codes(ctx).send(link, session, reader)
    else:
        if action == "verify":
            pending, renewed = await mail_codes(ctx).verify(link, session, body.get("code"),
                                                            reader)
        elif action == "passcode":
            pending, renewed = await actions.give_passcode(ctx.db, link, session,
                                                           body.get("passcode"), reader)
        else:
            pending, renewed = await actions.accept_agreement(ctx.db, link, session,
                                                              body.get("name"), reader)
        status, answer = 200, {"pending": pending}
    return status, answer, renewed or await sessions.renew(ctx.db, session)


def mail_codes(ctx: AppContext) -> EmailCodes:
    if ctx.codes is None:  # the link was made while SMTP was configured
        raise ServiceUnavailable("mail is not configured on this server (smtp.host)",
                                 retry_after=60)
    return ctx.codes


class OpenSessionHandler(ApiReaderMixin):
    async def post(self, token: str) -> None:
        link = await self.own_link(token)
        session_id, pending = await actions.open_session(self.ctx.db, link, self.reader())
        self.send_json(201, {"sessionId": session_id, "pending": pending})


class SessionActionHandler(ApiReaderMixin):
    action = ""  # code, verify, passcode or agreement: one route each (the OpenAPI file's)

    async def post(self, token: str, session_id: str) -> None:
        link = await self.own_link(token)
        Gates().admit_open(link.policy, self.viewer_ip())
        session = await sessions.session_of(self.ctx.db, session_id, link)
        body = self.json_body() if self.action != "code" else {}
        status, answer, renewed = await act(self.ctx, self.reader(), link, session,
                                            self.action, body)
        self.send_json(status, {**answer, "sessionId": renewed})


class SendCodeHandler(SessionActionHandler):
    action = "code"


class VerifyCodeHandler(SessionActionHandler):
    action = "verify"


class PasscodeHandler(SessionActionHandler):
    action = "passcode"


class AgreementHandler(SessionActionHandler):
    action = "agreement"


class RoomOpenSessionHandler(OpenSessionHandler):
    rooms = True


class RoomSendCodeHandler(SendCodeHandler):
    rooms = True


class RoomVerifyCodeHandler(VerifyCodeHandler):
    rooms = True


class RoomPasscodeHandler(PasscodeHandler):
    rooms = True


class RoomAgreementHandler(AgreementHandler):
    rooms = True


SESSION = r"/v1/views/([^/]+)/sessions/([^/]+)"
ROOM_SESSION = r"/v1/room-views/([^/]+)/sessions/([^/]+)"
ROUTES = [
    (r"/v1/views/([^/]+)/sessions", OpenSessionHandler),
    (SESSION + "/code", SendCodeHandler),
    (SESSION + "/verify", VerifyCodeHandler),
    (SESSION + "/passcode", PasscodeHandler),
    (SESSION + "/agreement", AgreementHandler),
    (r"/v1/room-views/([^/]+)/sessions", RoomOpenSessionHandler),
    (ROOM_SESSION + "/code", RoomSendCodeHandler),
    (ROOM_SESSION + "/verify", RoomVerifyCodeHandler),
    (ROOM_SESSION + "/passcode", RoomPasscodeHandler),
    (ROOM_SESSION + "/agreement", RoomAgreementHandler),
]

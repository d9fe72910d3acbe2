"""Members' sign-in and sessions over HTTP, under `/console/auth/`: ask for a code, sign in
with it or with the operator's link, choose an account, see and end sessions, sign out.

No API key: these routes stand on the session cookie (`web.session_cookie`). Every unsafe one
checks the `Origin`, including the two that open a session (a cross-site form must not sign a
victim in to the attacker's account); those that act on a session also need its CSRF token
(`web.console_session`)."""

from __future__ import annotations

from typing import Any

from vaultd.errors import ServiceUnavailable
from vaultd.services.members import sessions, sign_in_links
from vaultd.services.members.sessions import NewSession, SignedIn
from vaultd.services.members.sign_in_codes import SignInCodes
from vaultd.web.console_session import SessionHandlerMixin
from vaultd.web.session_cookie import clear_session_cookie, set_session_cookie

CONSOLE_PATH = "/console"


class ConsoleAuthBase(SessionHandlerMixin):
    public = True  # the session cookie, not a key: each handler asks for it

    def codes(self) -> SignInCodes:
        if self.ctx.sign_in_codes is None:
            raise ServiceUnavailable("sign-in is not available on this server", retry_after=60)
        return self.ctx.sign_in_codes

    def opened(self, session: NewSession) -> dict[str, Any]:
        set_session_cookie(self, self.ctx.settings, session)
        return {"accounts": [choice.as_json() for choice in session.accounts],
                "accountId": session.chosen_account_id, "csrfToken": session.csrf_token}


def who(signed_in: SignedIn) -> dict[str, Any]:
    member, account = signed_in.member, signed_in.account
    return {
        "email": signed_in.email,
        "member": None if member is None or account is None else {
            "id": member["_id"], "name": member["name"], "role": member["role"]},
        "account": None if account is None else {"id": account["_id"], "name": account["name"]},
        "csrfToken": signed_in.csrf_token,
    }


class SendCodeHandler(ConsoleAuthBase):
    async def post(self) -> None:
        self.check_origin()
        body = self.json_body()
        await self.codes().send(body.get("email"), self.client_ip())
        self.send_json(202, {"sent": True})


class SignInHandler(ConsoleAuthBase):
    async def post(self) -> None:
        self.check_origin()
        body = self.json_body()
        session = await self.codes().sign_in(body.get("email"), body.get("code"),
                                             self.client_ip(), self.user_agent())
        self.send_json(200, self.opened(session))


class SignInLinkHandler(ConsoleAuthBase):
    async def get(self, token: str) -> None:
        session = await sign_in_links.use_link(self.ctx.db, self.ctx.settings, token,
                                               self.client_ip(), self.user_agent())
        self.opened(session)
        self.redirect(CONSOLE_PATH, status=303)


class ChooseAccountHandler(ConsoleAuthBase):
    async def post(self) -> None:
        signed_in = await self.require_session()
        account_id = self.json_body().get("accountId")
        await sessions.choose_account(self.ctx.db, signed_in, account_id)
        chosen = await sessions.resolve(self.ctx.db, self.ctx.settings, self.session_id)
        self.send_json(200, who(chosen or signed_in))


class SignOutHandler(ConsoleAuthBase):
    async def post(self) -> None:
        signed_in = await self.require_session()
        await sessions.sign_out(self.ctx.db, signed_in, ip=self.client_ip())
        clear_session_cookie(self, self.ctx.settings)
        self.send_empty(204)


class SessionHandler(ConsoleAuthBase):
    async def get(self) -> None:
        signed_in = await self.require_session()
        body = who(signed_in)
        body["accounts"] = [c.as_json() for c in
                            await sessions.memberships(self.ctx.db, signed_in.email)]
        self.send_json(200, body)


class SessionsHandler(ConsoleAuthBase):
    async def get(self) -> None:
        signed_in = await self.require_session()
        self.send_json(200, {"sessions": await sessions.list_sessions(self.ctx.db, signed_in)})


class RevokeSessionHandler(ConsoleAuthBase):
    async def delete(self, public_id: str) -> None:
        signed_in = await self.require_session()
        await sessions.revoke(self.ctx.db, signed_in, public_id, ip=self.client_ip())
        self.send_empty(204)


ROUTES = [
    (r"/console/auth/code", SendCodeHandler),
    (r"/console/auth/sign-in", SignInHandler),
    (r"/console/auth/link/([^/]+)", SignInLinkHandler),
    (r"/console/auth/account", ChooseAccountHandler),
    (r"/console/auth/sign-out", SignOutHandler),
    (r"/console/auth/session", SessionHandler),
    (r"/console/auth/sessions", SessionsHandler),
    (r"/console/auth/sessions/([^/]+)", RevokeSessionHandler),
]

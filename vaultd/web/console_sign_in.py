"""The console's sign-in pages: `/console/sign-in` (a mailed code, or the identity provider
when one is set) and `/console/account` (the account chooser, for a person in several).

Plain forms: each posts and redirects, so signing in needs no script. The code routes are the
services of `/console/auth/` (`SignInCodes`), with the same Origin check and limits; a refusal
is shown on the form again, in the service's words, with its status."""

from __future__ import annotations

from typing import Any

from vaultd.errors import ServiceUnavailable, Unauthorized
from vaultd.services.members import sessions
from vaultd.services.members.sessions import NewSession
from vaultd.services.members.sign_in_codes import SignInCodes
from vaultd.web.console_page import CHOOSE_ACCOUNT_PATH, HOME_PATH, SIGN_IN_PATH, ConsoleBase
from vaultd.web.session_cookie import set_session_cookie

CODE_SENT = ("If {email} is a member's address, a sign-in code is on its way. "
             "It is good for a few minutes.")


class SignInPage(ConsoleBase):
    public = True  # the person has no session yet
    error_template = "console/sign_in.html"

    def codes(self) -> SignInCodes:
        if self.ctx.sign_in_codes is None:
            raise ServiceUnavailable("sign-in by code is not available on this server: "
                                     "it needs mail (smtp.host)", retry_after=3600)
        return self.ctx.sign_in_codes

    def error_values(self) -> dict[str, Any]:
        return self.form_values(self.get_body_argument("email", "") or "", None)

    def form_values(self, email: str, sent: str | None) -> dict[str, Any]:
        oidc = self.ctx.oidc
        return {"email": email, "sent": sent, "code_on": bool(self.ctx.settings.smtp_host),
                "provider": oidc.client.provider_name if oidc else None}

    def opened(self, session: NewSession) -> None:
        set_session_cookie(self, self.ctx.settings, session)
        self.redirect(HOME_PATH if session.chosen_account_id else CHOOSE_ACCOUNT_PATH,
                      status=303)

    async def get(self) -> None:
        self.page("sign_in.html", "Sign in", error=None, **self.form_values("", None))

    async def post(self) -> None:
        self.check_origin()
        session = await self.codes().sign_in(self.get_body_argument("email", ""),
                                             self.get_body_argument("code", ""),
                                             self.client_ip(), self.user_agent())
        self.opened(session)


class SendCodePage(SignInPage):
    async def post(self) -> None:
        self.check_origin()
        email = (self.get_body_argument("email", "") or "").strip()
        await self.codes().send(email, self.client_ip())
        self.page("sign_in.html", "Sign in", error=None,
                  **self.form_values(email, CODE_SENT.format(email=email)))


class ChooseAccountPage(ConsoleBase):
    """The accounts the signed-in person is a member of; one click works in it."""

    public = True  # a session without an account yet: checked here

    async def get(self) -> None:
        try:
            signed_in = await self.require_session()
        except Unauthorized:
            if not self.wants_html():
                raise
            self.redirect(SIGN_IN_PATH, status=303)
            return
        choices = await sessions.memberships(self.ctx.db, signed_in.email)
        self.page("account.html", "Choose an account", choices=choices)

    async def post(self) -> None:
        signed_in = await self.require_session()
        await sessions.choose_account(self.ctx.db, signed_in,
                                      self.get_body_argument("accountId", ""))
        self.redirect(HOME_PATH, status=303)


ROUTES = [
    (r"/console/sign-in", SignInPage),
    (r"/console/sign-in/code", SendCodePage),
    (r"/console/account", ChooseAccountPage),
]

"""Sign-in with the company's identity provider (OpenID Connect), and which sign-in methods
are on: `GET /console/auth/methods`, `/console/auth/oidc/start`, `/console/auth/oidc/callback`.

Public routes: the person has no session yet. The pending sign-in is bound to this browser by
a short-lived cookie (`vaultd_oidc`); docs/security.md, *Sign-in with an identity provider*."""

from __future__ import annotations

from vaultd.errors import Forbidden, NotFound
from vaultd.services.members.oidc import RelyingParty
from vaultd.services.members.oidc_pending import (
    PENDING_SECONDS,
    new_browser_secret,
    valid_secret,
)
from vaultd.services.members.sign_in import sign_in_verified_email
from vaultd.web.base import BaseHandler
from vaultd.web.client_ip import viewer_ip
from vaultd.web.session_cookie import is_https, set_session_cookie

BROWSER_COOKIE = "vaultd_oidc"
COOKIE_PATH = "/console/auth/oidc"
NOT_A_MEMBER = "this email address is not a member of any account on this vault"


class MethodsHandler(BaseHandler):
    """What the console's sign-in page offers."""

    public = True

    async def get(self) -> None:
        oidc = self.ctx.oidc
        # Codes are mailed: without smtp.host, asking for one is a 503, so it is not offered.
        self.send_json(200, {"code": bool(self.ctx.settings.smtp_host),
                             "oidc": {"name": oidc.client.provider_name} if oidc else None})


class OidcHandler(BaseHandler):
    public = True
    db_deadline = False  # the request waits on the provider between its database calls

    def person_ip(self) -> str:
        """The browser's address: from the trusted proxy's header behind one (`proxy.trusted`)."""
        trusted = self.ctx.settings.proxy_trusted
        return viewer_ip(self.request, trusted) or self.request.remote_ip or ""

    def relying_party(self) -> RelyingParty:
        if self.ctx.oidc is None:
            raise NotFound("sign-in with an identity provider is not configured (auth.oidc)")
        return self.ctx.oidc


class StartHandler(OidcHandler):
    async def get(self) -> None:
        relying_party = self.relying_party()
        # One secret per browser, kept while sign-ins are pending: two tabs may both sign in.
        secret = self.get_cookie(BROWSER_COOKIE)
        if secret is None or not valid_secret(secret):
            secret = new_browser_secret()
        location = await relying_party.begin(secret, self.person_ip())
        # Lax: the provider's redirect back is a top-level navigation from another site.
        self.set_cookie(BROWSER_COOKIE, secret, path=COOKIE_PATH, max_age=PENDING_SECONDS,
                        httponly=True, secure=is_https(self.ctx.settings), samesite="Lax")
        self.redirect(location, status=302)


class CallbackHandler(OidcHandler):
    async def get(self) -> None:
        relying_party = self.relying_party()
        identity = await relying_party.finish(
            state=self.get_query_argument("state", ""), code=self.get_query_argument("code", ""),
            error=self.get_query_argument("error", ""),
            browser_secret=self.get_cookie(BROWSER_COOKIE))
        settings = self.ctx.settings
        session = await sign_in_verified_email(
            self.ctx.db, settings, email=identity.email, method="oidc",
            ip=self.person_ip(),
            user_agent=self.request.headers.get("User-Agent", "")[:512])
        if session is None:
            raise Forbidden(NOT_A_MEMBER)
        set_session_cookie(self, settings, session)
        self.redirect("/console", status=303)


ROUTES = [
    (r"/console/auth/methods", MethodsHandler),
    (r"/console/auth/oidc/start", StartHandler),
    (r"/console/auth/oidc/callback", CallbackHandler),
]

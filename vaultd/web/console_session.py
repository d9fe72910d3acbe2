"""What every session-authenticated route shares: the session read from the cookie, and the
two checks an unsafe request must pass, the `Origin` and the CSRF token.

The cookie alone never authorises a change. A browser sends it with requests another site makes
it send; SameSite=Lax (`web.session_cookie`) already keeps it off cross-site POSTs, but not off
a sibling subdomain's (same site, other origin) nor off a browser that ignores SameSite. So an
unsafe method (anything but GET, HEAD, OPTIONS) also needs:
- an `Origin` (or, when a browser sends none, the `Referer`'s origin) equal to the deployment's
  own: `public_url`'s origin when set, else the request's own scheme and Host;
- the session's CSRF token in `X-CSRF-Token` (or a form's `_csrf` field), compared in constant
  time. The token is derived from the session id (`sessions.csrf_token_of`): another session's
  token, or one read from the database, does not match."""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from vaultd.errors import Forbidden, Unauthorized
from vaultd.services.members import sessions
from vaultd.services.members.sessions import SignedIn
from vaultd.web.base import BaseHandler
from vaultd.web.client_ip import viewer_ip
from vaultd.web.session_cookie import clear_session_cookie, session_id_from

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
NOT_SIGNED_IN = "not signed in (or the session has ended): sign in again"
NO_ORIGIN = "cross-site request refused: the request carries no Origin or Referer"
OTHER_ORIGIN = "cross-site request refused: the Origin is not this site's"
NO_CSRF = "missing CSRF token: send the session's token in X-CSRF-Token"
WRONG_CSRF = "the CSRF token is not this session's"


def origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


class SessionHandlerMixin(BaseHandler):
    """A handler whose caller is a signed-in member, not an API key."""

    signed_in: SignedIn | None = None
    session_id = ""  # the cookie's, once `require_session` found it live

    def own_origin(self) -> str:
        public = self.ctx.settings.public_url
        if public:
            return origin_of(public) or ""
        return f"{self.request.protocol}://{self.request.host}".lower()

    def check_origin(self) -> None:
        """Unsafe methods only: the request must come from this site's own pages."""
        if self.request.method in SAFE_METHODS:
            return
        headers = self.request.headers
        origin = headers.get("Origin")
        if origin is None or origin == "null":
            referer = headers.get("Referer")
            origin = origin_of(referer) if referer else None
        if origin is None:
            raise Forbidden(NO_ORIGIN)
        if origin.lower() != self.own_origin():
            raise Forbidden(OTHER_ORIGIN)

    def check_csrf(self, signed_in: SignedIn) -> None:
        if self.request.method in SAFE_METHODS:
            return
        token = self.request.headers.get("X-CSRF-Token")
        if token is None and self.request.headers.get("Content-Type", "").startswith(
                "application/x-www-form-urlencoded"):
            token = self.get_body_argument("_csrf", None)
        if not token:
            raise Forbidden(NO_CSRF)
        if not hmac.compare_digest(token.encode(), signed_in.csrf_token.encode()):
            raise Forbidden(WRONG_CSRF)

    async def require_session(self) -> SignedIn:
        """The live session of the cookie, with the Origin and CSRF checks of an unsafe
        request passed; else 401 (no session) or 403 (a check failed)."""
        self.check_origin()
        session_id = session_id_from(self, self.ctx.settings)
        if session_id is None:
            raise Unauthorized(NOT_SIGNED_IN)
        signed_in = await sessions.resolve(self.ctx.db, self.ctx.settings, session_id)
        if signed_in is None:
            clear_session_cookie(self, self.ctx.settings)
            raise Unauthorized(NOT_SIGNED_IN)
        self.check_csrf(signed_in)
        self.signed_in, self.session_id = signed_in, session_id
        return signed_in

    def client_ip(self) -> str:
        return viewer_ip(self.request, self.ctx.settings.proxy_trusted) or ""

    def user_agent(self) -> str:
        return self.request.headers.get("User-Agent", "")[:300]

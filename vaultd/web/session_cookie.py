"""The member session's cookie: written once at sign-in, read on every console request.

On an https deployment (`public_url` starts with https://) the cookie is `__Host-vaultd_session`
with `Secure`: the prefix makes browsers refuse it unless it is Secure, host-only and `Path=/`,
so neither a sibling subdomain nor a plain-http page can plant or read it. Over plain http (the
quick start) `Secure` would make browsers drop it, so it is `vaultd_session` without.

Always HttpOnly (no script reads it) and SameSite=Lax: the cookie goes with top-level navigations
from other sites (a bookmarked or mailed console address opens signed in) but with no
cross-site subrequest or form POST. Strict would also drop it on the first navigation from a
mail or chat client, showing a signed-out console to a signed-in person. Lax alone is not the
CSRF defence: every unsafe request also needs the CSRF token and a same-origin `Origin`
(`vaultd.web.console_auth`)."""

from __future__ import annotations

import tornado.web

from vaultd.config import Settings
from vaultd.services.members.sessions import NewSession

SECURE_NAME = "__Host-vaultd_session"
PLAIN_NAME = "vaultd_session"


def is_https(settings: Settings) -> bool:
    return settings.public_url.lower().startswith("https://")


def cookie_name(settings: Settings) -> str:
    return SECURE_NAME if is_https(settings) else PLAIN_NAME


def set_session_cookie(handler: tornado.web.RequestHandler, settings: Settings,
                       session: NewSession) -> None:
    """The cookie of a session just opened. A session cookie for the browser (no Max-Age):
    the server ends the session by its own clock, whatever the browser keeps."""
    handler.set_cookie(cookie_name(settings), session.session_id, path="/", httponly=True,
                       secure=is_https(settings), samesite="Lax")


def clear_session_cookie(handler: tornado.web.RequestHandler, settings: Settings) -> None:
    handler.clear_cookie(cookie_name(settings), path="/", httponly=True,
                         secure=is_https(settings), samesite="Lax")


def session_id_from(handler: tornado.web.RequestHandler, settings: Settings) -> str | None:
    """The session id the request's cookie carries, or None. Only the deployment's own name is
    read: on https a plain `vaultd_session` (which anyone on the path could have set) is not."""
    value = handler.get_cookie(cookie_name(settings))
    return value or None

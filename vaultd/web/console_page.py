"""The console's pages: what every server-rendered page under `/console` shares.

A page is a `ConsolePage`: its caller is the session's member (the cookie, `web.console_session`),
held to the route's permission in `web.permissions` exactly as an API key is (a form an auditor
posts is refused 403 naming the role, whatever the page showed). Templates live in
`templates/console/` and extend `layout.html` (navigation, flash line, sign-out form); each form
carries the session's CSRF token (`_csrf`) and posts to its own route, then redirects (303) back
to a page with a fixed flash message, so a page works without script. Errors are the domain
errors of `vaultd.errors`: a browser (Accept: text/html) gets them as a page in words, any other
client as the API's `{"error"}` (`BaseHandler.write_error`).

Every response carries the console's strict CSP: scripts and styles only from `/assets/console/`,
nothing inline, nothing from elsewhere, no framing (docs/console.md)."""

from __future__ import annotations

from http.client import responses
from typing import Any

from tornado.web import StaticFileHandler

from vaultd.errors import Forbidden, Unauthorized
from vaultd.services.accounts.accounts import Account
from vaultd.services.common.acting import ACTING
from vaultd.services.members import sessions
from vaultd.services.members.callers import set_caller
from vaultd.services.members.roles import Permission, allows
from vaultd.services.members.sessions import SignedIn
from vaultd.web.console_session import SessionHandlerMixin
from vaultd.web.page_headers import protect_page
from vaultd.web.session_cookie import clear_session_cookie
from vaultd.web.viewer import STATIC_DIR

CONSOLE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; "
               "img-src 'self' data: blob:; connect-src 'self'; form-action 'self'; "
               "base-uri 'none'; frame-ancestors 'none'")
SIGN_IN_PATH = "/console/sign-in"
CHOOSE_ACCOUNT_PATH = "/console/account"
HOME_PATH = "/console/files"
# The navigation every page shows: (label, path, section).
NAVIGATION = (("Files", "/console/files", "files"), ("Rooms", "/console/rooms", "rooms"),
              ("Activity", "/console/activity", "activity"),
              ("Trace", "/console/trace", "trace"), ("Settings", "/console/settings", "settings"))
# Flash lines a redirect may ask for by key (`?done=<key>`): fixed words, never request text.
FLASHES = {
    "signed-out": "You are signed out.",
    "link-revoked": "The link was revoked: its viewer's next page is refused.",
    "links-revoked": "Every active link of this file was revoked.",
    "link-extended": "The link's expiry was changed; its address is the same.",
    "file-deleted": "The file was deleted, with all its links.",
    "key-revoked": "The key was revoked: it opens nothing from now on.",
    "member-invited": "The member was added: they sign in with a code mailed to them.",
    "role-changed": "The role was changed; their open sessions ended.",
    "member-removed": "The member was removed; their sessions ended.",
    "notifications-saved": "Your notifications were saved.",
    "webhook-deleted": "The endpoint was deleted: nothing more is sent to it.",
    "branding-saved": ("The branding was saved: viewers see it on their next page, in the "
                       "viewer and in the watermark."),
    "webhook-test-sent": ("A test event was queued: its delivery shows in the endpoint's "
                          "delivery log within seconds (reload the page)."),
    "room-created": "The room was created: add folders and files, then share it.",
    "folder-added": "The folder was added to the index.",
    "file-added": "The file was added to the index.",
}


def protect_console(handler: Any) -> None:
    # same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with a
    # form's POST, which the Origin check must refuse. No console address holds a secret, and
    # nothing is sent to another site.
    protect_page(handler, CONSOLE_CSP, "same-origin")


class ConsoleBase(SessionHandlerMixin):
    """Headers, HTML errors and rendering shared by the signed-in pages and the sign-in page."""

    section = ""  # the navigation entry marked current
    error_template = "console/error.html"

    def set_default_headers(self) -> None:
        super().set_default_headers()
        protect_console(self)

    def wants_html(self) -> bool:
        """A browser's navigation or form post; scripts and API clients get JSON errors."""
        return "text/html" in self.request.headers.get("Accept", "")

    def flash(self) -> str | None:
        return FLASHES.get(self.get_query_argument("done", "") or "")

    def page(self, template: str, title: str, status: int = 200, **values: Any) -> None:
        self.set_status(status)
        self.render(f"console/{template}", **self.page_values(title), **values)

    def page_values(self, title: str) -> dict[str, Any]:
        return {"title": title, "section": self.section, "navigation": NAVIGATION,
                "signed_in": self.signed_in, "actor": self.actor, "csrf": self.csrf(),
                "can": self.can, "Permission": Permission, "flash": self.flash(),
                "account_name": self.signed_in.account["name"]
                if self.signed_in and self.signed_in.account else ""}

    def csrf(self) -> str:
        return self.signed_in.csrf_token if self.signed_in else ""

    def can(self, permission: Permission) -> bool:
        """Whether the page shows a control: the route refuses it anyway (`authorize`)."""
        return self.actor is not None and allows(self.actor.role, permission)

    def done(self, path: str, flash: str) -> None:
        """After a form: back to a page, which shows the flash line (post, redirect, get)."""
        self.redirect(f"{path}?done={flash}", status=303)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        if not self.wants_html():
            super().write_error(status_code, **kwargs)
            return
        error, self._mapped_error = self._mapped_error, None
        status = error.status if error is not None else status_code
        message = error.message if error is not None else responses.get(status, "error")
        self.clear_header("Content-Disposition")
        self.set_status(status)
        self.render(self.error_template, **self.page_values("Something went wrong"),
                    error=message, status=status, **self.error_values())

    def error_values(self) -> dict[str, Any]:
        """What a page's own error template needs besides the message (the form's values)."""
        return {}


class ConsolePage(ConsoleBase):
    """A signed-in page: the member's session, their account chosen, the route's permission held."""

    async def prepare(self) -> None:
        try:
            signed_in = await self.require_session()
        except Unauthorized:
            if self.request.method == "GET" and self.wants_html():
                self.redirect(SIGN_IN_PATH, status=303)
                return
            raise
        actor, account = signed_in.actor, signed_in.account
        if actor is None or account is None:
            if self.request.method == "GET":
                self.redirect(CHOOSE_ACCOUNT_PATH, status=303)
                return
            raise Forbidden("choose an account first")
        self.account, self.actor = Account.from_doc(account), actor
        self.authorize(actor)
        ACTING.set(actor.as_record())
        set_caller(actor)  # the services hold it to its role again (members.caller)


class HomeHandler(ConsoleBase):
    """`/console`: the files, or the sign-in page for a browser without a session."""

    public = True

    async def get(self) -> None:
        try:
            await self.require_session()
        except Unauthorized:
            self.redirect(SIGN_IN_PATH, status=303)
            return
        self.redirect(HOME_PATH, status=303)


class SignOutHandler(ConsoleBase):
    """The layout's "Sign out" button: ends the session, back to the sign-in page."""

    public = True  # a session, not a role: every signed-in person may end their own

    async def post(self) -> None:
        signed_in: SignedIn = await self.require_session()
        await sessions.sign_out(self.ctx.db, signed_in, ip=self.client_ip())
        clear_session_cookie(self, self.ctx.settings)
        self.done(SIGN_IN_PATH, "signed-out")


class ConsoleStaticHandler(StaticFileHandler):
    """`/assets/console/...`: the console's own script and style, served with its headers."""

    def set_default_headers(self) -> None:
        protect_console(self)

    def set_extra_headers(self, path: str) -> None:
        self.clear_header("Server")
        protect_console(self)

    def compute_etag(self) -> None:
        return None

    def get_modified_time(self) -> None:
        return None


ROUTES = [(r"/console", HomeHandler), (r"/console/sign-out", SignOutHandler)]
STATIC_ROUTE = (r"/assets/console/([a-z0-9-]+\.(?:js|css|svg))", ConsoleStaticHandler,
                {"path": str(STATIC_DIR / "console")})

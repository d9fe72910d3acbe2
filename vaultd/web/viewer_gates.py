"""The hosted viewer's gates: a cookie session per browser and link, the gate screens
(templates/gate.html, static/viewer-gate.js) and the four actions under /v/<token>/session/.

The cookie holds the session id: HttpOnly, SameSite=Strict, Secure when `public_url` is https,
Path=/v/<token> (sent to this link only), ending with the session (24 h, or the link's expiry).
Actions take JSON only, so a cross-site form cannot post them, and SameSite keeps the cookie
off cross-site requests anyway."""

from __future__ import annotations

from typing import Any

from vaultd.errors import Forbidden, NotFound
from vaultd.records import ViewerSessionDoc
from vaultd.services.gates import actions, agreements, counters, sessions
from vaultd.services.gates.actions import Reader
from vaultd.services.gates.check import Gates
from vaultd.services.gates.codes import RESEND_SECONDS, masked
from vaultd.services.gates.policy import session_gates
from vaultd.services.links import LINK_NOT_FOUND, OpenLink
from vaultd.timefmt import utcnow
from vaultd.web.gate_sessions import act
from vaultd.web.viewer_base import SESSION_COOKIE as COOKIE
from vaultd.web.viewer_base import ViewerBase

# A browser without its cookie opens a new session: bounded per link and address, so a token
# holder cannot fill the database with sessions (the API's sessions need the account's key).
SESSIONS_PER_ADDRESS_HOUR = 60
TOO_MANY_SESSIONS = "this link was opened too many times from this address; try again later"


def reader_of(handler: ViewerBase) -> Reader:
    agent = handler.request.headers.get("User-Agent", "")[:300] or None
    return Reader(handler.client_ip(), agent)


def set_session_cookie(handler: ViewerBase, token: str, session_id: str,
                       session: ViewerSessionDoc) -> None:
    seconds = max(1, int((session["expiresAt"] - utcnow()).total_seconds()))
    handler.set_cookie(COOKIE, session_id, path=f"/v/{token}", max_age=seconds, httponly=True,
                       samesite="Strict",
                       secure=handler.ctx.settings.public_url.startswith("https://"))


async def guard(handler: ViewerBase, token: str, opened: OpenLink) -> bool:
    """Whether the gate screens were answered instead of the document (True), for a link with
    a policy. Opening counts against maxOpens: one session per browser, or one view."""
    link = opened.link
    try:
        Gates().admit_open(link, handler.client_ip())
    except Forbidden as refused:
        handler.set_status(403)
        handler.render("gate.html", details=None, refused=refused.message, screen=None)
        return True
    if not session_gates(link["policy"]):
        await sessions.count_open(handler.ctx.db, link)
        return False
    session = await sessions.find_session(handler.ctx.db, handler.get_cookie(COOKIE))
    if not sessions.is_current(session, link):
        if not await counters.take(handler.ctx.db, f"sessions:{link['_id']}:{handler.client_ip()}",
                                   SESSIONS_PER_ADDRESS_HOUR, 3600):
            handler.set_status(429)
            handler.render("gate.html", details=None, refused=TOO_MANY_SESSIONS, screen=None)
            return True
        session_id, session = await sessions.open_session(handler.ctx.db, link,
                                                          handler.client_ip())
        set_session_cookie(handler, token, session_id, session)
    assert session is not None
    pending = actions.pending_of(opened, session)
    if not pending:
        return False
    handler.render("gate.html", refused=None, **await screen(handler, opened, pending))
    return True


async def screen(handler: ViewerBase, opened: OpenLink, pending: list[str]) -> dict[str, Any]:
    """What the gate page shows: the first pending gate, and the agreement's text."""
    agreement = None
    if "agreement" in pending:
        agreement = await agreements.version_of(handler.ctx.db,
                                                opened.link["policy"]["agreement"])
    name, email = opened.link["viewerName"], opened.link["viewerEmail"]
    return {"details": {"fileName": opened.file["name"], "brand": opened.account.brand,
                        # The address is what the reader proves: never shown whole before that.
                        "viewerName": masked(email) if name == email else name},
            "screen": {"gate": pending[0], "pending": pending, "agreement": agreement,
                       "maskedEmail": masked(opened.link["viewerEmail"]),
                       "resendSeconds": RESEND_SECONDS}}


class ViewerSessionActionHandler(ViewerBase):
    """POST /v/<token>/session/<action>: JSON in, JSON out, the cookie names the session."""

    async def post(self, token: str, action: str) -> None:
        opened = await self.ctx.pages.open_link(token)
        if "policy" not in opened.link:
            raise NotFound(LINK_NOT_FOUND)
        Gates().admit_open(opened.link, self.client_ip())
        session = await sessions.session_of(self.ctx.db, self.get_cookie(COOKIE), opened.link)
        body = self.json_body() if action != "code" else {}
        self.send_json(*await act(self.ctx, reader_of(self), opened, session, action, body))


ROUTES = [
    (r"/v/([^/]+)/session/(code|verify|passcode|agreement)", ViewerSessionActionHandler),
]

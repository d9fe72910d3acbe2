"""The hosted viewer's gates: a cookie session per browser and link, the gate screens
(templates/gate.html with the first pending gate's own screen, static/viewer-gate.js) and every
registered gate's actions (`services.gates.registry`) under /v/<token>/session/ (a file link)
or /r/<token>/session/ (a room link: its index and every document's pages).

The cookie holds the session id: HttpOnly, SameSite=Strict, Secure when `public_url` is https,
Path=/v/<token> or /r/<token> (sent to this link only), ending with the session (24 h, or the
link's expiry).
Actions take JSON only, so a cross-site form cannot post them, and SameSite keeps the cookie
off cross-site requests anyway. Each action that succeeds sets the session's new id in the
cookie (`gate_sessions.act`): a cookie planted before it has ended."""

from __future__ import annotations

from typing import Any

from vaultd.errors import Forbidden, NotFound
from vaultd.records import ViewerSessionDoc
from vaultd.services.gates import actions, counters, gated, registry, sessions
from vaultd.services.gates.check import Gates
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.registry import session_gates
from vaultd.services.links.links import LINK_NOT_FOUND
from vaultd.services.rooms import reads
from vaultd.timefmt import utcnow
from vaultd.web.gate_sessions import act, action_body
from vaultd.web.viewer_base import SESSION_COOKIE as COOKIE
from vaultd.web.viewer_base import ViewerBase

# A browser without its cookie opens a new session: bounded per link and address, so a token
# holder cannot fill the database with sessions (the API's sessions need the account's key).
SESSIONS_PER_ADDRESS_HOUR = 60
TOO_MANY_SESSIONS = "this link was opened too many times from this address; try again later"


def reader_of(handler: ViewerBase) -> Reader:
    agent = handler.request.headers.get("User-Agent", "")[:300] or None
    return Reader(handler.client_ip(), agent)


def cookie_path(link: GatedLink, token: str) -> str:
    """The path the session cookie is sent under: this link's pages only."""
    return f"/r/{token}" if link.room_id is not None else f"/v/{token}"


def set_session_cookie(handler: ViewerBase, path: str, session_id: str,
                       session: ViewerSessionDoc) -> None:
    seconds = max(1, int((session["expiresAt"] - utcnow()).total_seconds()))
    handler.set_cookie(COOKIE, session_id, path=path, max_age=seconds, httponly=True,
                       samesite="Strict",
                       secure=handler.ctx.settings.public_url.startswith("https://"))


async def guard(handler: ViewerBase, token: str, link: GatedLink) -> bool:
    """Whether the gate screens were answered instead of the document or room (True), for a
    link with a policy. A link with session gates or `maxOpens` is read in a cookie session:
    one per browser, counted as one open once its last gate is passed (no gate: at once)."""
    assert link.policy is not None
    if refused_here(handler, link):
        return True
    if not session_gates(link.policy) and "maxOpens" not in link.policy:
        return False
    session = await sessions.find_session(handler.ctx.db, handler.get_cookie(COOKIE))
    if not sessions.is_current(session, link.id):
        address = counters.address_key(handler.client_ip())
        if not await counters.take(handler.ctx.db, f"sessions:{link.id}:{address}",
                                   SESSIONS_PER_ADDRESS_HOUR, 3600):
            handler.set_status(429)
            handler.render("gate.html", details=None, refused=TOO_MANY_SESSIONS, screen=None)
            return True
        session_id, session = await sessions.open_session(handler.ctx.db, link,
                                                          handler.client_ip())
        set_session_cookie(handler, cookie_path(link, token), session_id, session)
    assert session is not None
    pending = actions.pending_of(link, session)
    if not pending:
        return False
    handler.render("gate.html", refused=None, **await screen(handler, link, pending))
    return True


def refused_here(handler: ViewerBase, link: GatedLink) -> bool:
    """`admit_open` for a hosted page: the refusal page (403) answered when it refuses."""
    try:
        Gates().admit_open(link.policy, handler.client_ip())
    except Forbidden as refused:
        handler.set_status(403)
        handler.render("gate.html", details=None, refused=refused.message, screen=None)
        return True
    return False


async def admitted_session(handler: ViewerBase, link: GatedLink) -> bool:
    """Whether the browser's cookie names a current session of `link` that was admitted (every
    session gate passed; a link with `maxOpens`: any session, each is counted when admitted)."""
    if link.policy is None or (not session_gates(link.policy)
                               and "maxOpens" not in link.policy):
        return True
    session = await sessions.find_session(handler.ctx.db, handler.get_cookie(COOKIE))
    current = session if sessions.is_current(session, link.id) else None
    return current is not None and not actions.pending_of(link, current)


async def screen(handler: ViewerBase, link: GatedLink, pending: list[str]) -> dict[str, Any]:
    """What the gate page shows: the steps, and the first pending gate's screen (its own
    template, given what the gate adds: the agreement's text, say). Of the link, only the
    account's brand: the document's name, its reader and their address are for a reader who
    passed every gate, not for whoever holds the token."""
    gates = [gate for gate in registry.gates() if gate.name in pending]
    current = gates[0]
    values = {"brand": link.brand, **await current.screen(handler.ctx.db, link)}
    return {"details": {"brand": link.brand},
            "screen": {"gate": current.name, "pending": pending,
                       "steps": [(gate.name, gate.step) for gate in gates],
                       "html": handler.render_string(current.screen_template, **values)}}


class ViewerSessionActionHandler(ViewerBase):
    """POST /v/<token>/session/<action>: JSON in, JSON out, the cookie names the session."""

    async def gated_link(self, token: str) -> GatedLink:
        return gated.file_link(await self.ctx.pages.open_link(token))

    async def post(self, token: str, name: str) -> None:
        found = registry.action_named(name)
        assert found is not None  # routed from the registry
        gate, action = found
        link = await self.gated_link(token)
        if link.policy is None:
            raise NotFound(LINK_NOT_FOUND)
        Gates().admit_open(link.policy, self.client_ip())
        session = await sessions.session_of(self.ctx.db, self.get_cookie(COOKIE), link)
        status, answer, renewed = await act(self.ctx, reader_of(self), link, session, gate,
                                            action, action_body(self, action))
        # The new id only in the HttpOnly cookie: the page's script never holds it.
        set_session_cookie(self, cookie_path(link, token), renewed, session)
        self.send_json(status, answer)


class RoomSessionActionHandler(ViewerSessionActionHandler):
    """POST /r/<token>/session/<action>: the same, for a room link."""

    async def gated_link(self, token: str) -> GatedLink:
        return gated.room_link(*await reads.open_room(self.ctx.db, token))


def routes() -> list[tuple[str, type]]:
    """The actions' routes: one pattern per link kind, naming every registered action."""
    names = "|".join(registry.action_names())  # plain names (`registry.register` holds it)
    return [(rf"/v/([^/]+)/session/({names})", ViewerSessionActionHandler),
            (rf"/r/([^/]+)/session/({names})", RoomSessionActionHandler)]


def __getattr__(name: str) -> Any:
    # `ROUTES` as every route module has it (`web.app.all_routes`), built from the registry
    # when read: the operator's extra gates are registered at start, after this import.
    if name == "ROUTES":
        return routes()
    raise AttributeError(name)

"""Reading a room: the proxy API (`/v1/room-views/...`, with the owner's key) and the hosted
room viewer (`/r/<token>`: its numbered index, each document in the existing viewer).

Every page and every status poll reads the link, the room and the document's place in the
link's scope again (`services.rooms.reads`): a document removed from the room or from the
link's scope stops at its next request with the same 404 as an unknown token.
"""

from __future__ import annotations

from typing import Any

from vaultd.errors import NotFound
from vaultd.records import RoomDoc, RoomLinkDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.gates import gated, sessions
from vaultd.services.gates.check import Gates
from vaultd.services.gates.policy import policy_json
from vaultd.services.links import links
from vaultd.services.links.links import OpenLink
from vaultd.services.pages.page_path import PageRequest
from vaultd.services.rooms import activity, reads, room_links, tree
from vaultd.web.analytics import report_activity
from vaultd.web.base import BaseHandler
from vaultd.web.permissions import CHANGE, READ
from vaultd.web.viewer_base import ViewerBase
from vaultd.web.viewer_gates import admitted_session, guard, refused_here
from vaultd.web.views import ViewerIpMixin


async def _opening(handler: BaseHandler, link: RoomLinkDoc, room: RoomDoc, account: Account,
                   ip: str | None) -> dict[str, Any]:
    """The room as the link sees it now; the opening logged (`room.view`, `room.opened`)."""
    nodes = await reads.visible_tree(handler.ctx.db, link)
    await activity.room_opened(handler.ctx.db, link, room["name"], ip)
    return reads.room_details(link, room, account, nodes)


class RoomViewHandler(ViewerIpMixin):
    """GET /v1/room-views/:token: the room name and the tree this link may see; a gated link's
    policy (never its passcode) and sessions, as `GET /v1/views/:token` shows a file link's."""

    async def get(self, token: str) -> None:
        assert self.account is not None
        link, room, account = await reads.open_room(self.ctx.db, token, self.account.id)
        gated_link = gated.room_link(link, room, account)
        policy = gated_link.policy
        Gates().admit_open(policy, self.viewer_ip())
        details = await _opening(self, link, room, account, self.viewer_ip())
        if policy is not None:  # a link without one answers exactly as before
            details["policy"] = policy_json(policy)
            details["sessions"] = await sessions.sessions_json(self.ctx.db, link)
        self.send_json(200, details)

    async def delete(self, token: str) -> None:
        assert self.account is not None
        await room_links.revoke(self.ctx.db, self.account.id, token)
        self.send_empty(204)


class RoomPageHandler(ViewerIpMixin):
    db_deadline = False  # waits on other things between its database calls (a render)
    deferred_auth = True  # the page path checks the key, then the room link (rooms.reads)

    async def get(self, token: str, file_id: str, page: str) -> None:
        request = PageRequest(token, page, self.viewer_ip(), api_key=self.bearer_key(),
                              departure=self.departure, file_id=file_id,
                              session=self.viewer_session())
        await self.ctx.pages.serve(request, self.send_page)


class RoomIndexPageHandler(ViewerBase):
    """GET /r/<token>: the numbered index; an unusable link gets the plain 404 page, a gated
    one the file viewer's gate screens until its session passed every gate."""

    async def get(self, token: str) -> None:
        try:
            link, room, account = await reads.open_room(self.ctx.db, token)
            if "policy" in link and await guard(self, token, gated.room_link(link, room,
                                                                             account)):
                return
        except NotFound:  # unusable, or spent by maxOpens as this open was counted
            self.set_status(404)
            self.render("not_available.html")
            return
        details = await _opening(self, link, room, account, self.client_ip())
        self.render("room.html", details=details, rows=index_rows(details["tree"]))


def index_rows(nodes: list[dict[str, Any]], depth: int = 0) -> list[dict[str, Any]]:
    """The tree flattened in index order, each row with its depth (a CSS class: no inline
    style under the viewer's CSP)."""
    rows: list[dict[str, Any]] = []
    for node in nodes:
        rows.append({**node, "depth": min(depth, tree.MAX_SHOWN_DEPTH)})
        rows += index_rows(node.get("children", []), depth + 1)
    return rows


class RoomDocumentBase(ViewerBase):
    async def document(self, token: str, file_id: str) -> OpenLink:
        return await reads.open_document(self.ctx.db, token, file_id)

    async def admitted(self, token: str, file_id: str) -> OpenLink:
        """The document, for a request about its pages that is not one (status, activity): a
        gated room link's cookie session must have passed every gate, as for its pages."""
        opened = await self.document(token, file_id)
        await self.ctx.pages.admit(opened, self.viewer_session(), self.client_ip())
        return opened


class RoomDocumentPageHandler(RoomDocumentBase):
    """GET /r/<token>/files/<fileId>: the document in the existing viewer. A gated link is
    admitted first (refused from a refused address or before `notBefore`, as every route of
    it); without a session that was admitted it goes to the index, whose screens pass the
    gates."""

    async def get(self, token: str, file_id: str) -> None:
        try:
            opened = await self.document(token, file_id)
            if "policy" in opened.link:
                link, room, account = await reads.open_room(self.ctx.db, token)
                gated_link = gated.room_link(link, room, account)
                if refused_here(self, gated_link):
                    return
                if not await admitted_session(self, gated_link):
                    self.redirect(f"/r/{token}", status=303)
                    return
        except NotFound:
            self.set_status(404)
            self.render("not_available.html")
            return
        self.render("viewer.html", details=links.link_details(opened))


class RoomImageHandler(RoomDocumentBase):
    db_deadline = False  # waits on other things between its database calls (a render)

    async def get(self, token: str, file_id: str, page: str) -> None:
        request = PageRequest(token, page, self.client_ip(), departure=self.departure,
                              file_id=file_id, session=self.viewer_session())
        await self.ctx.pages.serve(request, self.send_page)


class RoomStatusHandler(RoomDocumentBase):
    """Polled by the open document: blanked once it leaves the link's scope or the room; a gated
    link's answers only the session that passed its gates, as pages."""

    async def get(self, token: str, file_id: str) -> None:
        await self.admitted(token, file_id)
        self.send_json(200, {"active": True})


class RoomActivityHandler(RoomDocumentBase):
    """The viewer's visible-page time, counted for this reader and document."""

    async def post(self, token: str, file_id: str) -> None:
        await report_activity(self, await self.admitted(token, file_id))


ROUTES = [
    (r"/v1/room-views/([^/]+)", RoomViewHandler),
    (r"/v1/room-views/([^/]+)/files/([^/]+)/pages/([^/]+)", RoomPageHandler),
    (r"/r/([^/]+)", RoomIndexPageHandler),
    (r"/r/([^/]+)/files/([^/]+)", RoomDocumentPageHandler),
    (r"/r/([^/]+)/files/([^/]+)/pages/([^/]+)", RoomImageHandler),
    (r"/r/([^/]+)/files/([^/]+)/status", RoomStatusHandler),
    (r"/r/([^/]+)/files/([^/]+)/activity", RoomActivityHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/room-views/([^/]+)": {"GET": READ, "DELETE": CHANGE},
    r"/v1/room-views/([^/]+)/files/([^/]+)/pages/([^/]+)": {"GET": READ},
}

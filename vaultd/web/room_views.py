"""Reading a room: the proxy API (`/v1/room-views/...`, with the owner's key) and the hosted
room viewer (`/r/<token>`: its numbered index, each document in the existing viewer).

Every page and every status poll reads the link, the room and the document's place in the
link's scope again (`services.rooms.reads`): a document removed from the room or from the
link's scope stops at its next request with the same 404 as an unknown token.
"""

from __future__ import annotations

from typing import Any

from vaultd.errors import NotFound
from vaultd.services import links
from vaultd.services.links import OpenLink
from vaultd.services.page_path import PageRequest
from vaultd.services.rooms import activity, reads, room_links, tree
from vaultd.web.analytics import report_activity
from vaultd.web.base import BaseHandler
from vaultd.web.viewer_base import ViewerBase
from vaultd.web.views import ViewerIpMixin


async def _opened_room(handler: BaseHandler, token: str, owner: str | None,
                       ip: str | None) -> dict[str, Any]:
    """The room as the link sees it now; the opening logged (`room.view`, `room.opened`)."""
    link, room, account = await reads.open_room(handler.ctx.db, token, owner)
    nodes = await reads.visible_tree(handler.ctx.db, link)
    await activity.room_opened(handler.ctx.db, link, room["name"], ip)
    return reads.room_details(link, room, account, nodes)


class RoomViewHandler(ViewerIpMixin):
    """GET /v1/room-views/:token: the room name and the tree this link may see."""

    async def get(self, token: str) -> None:
        assert self.account is not None
        self.send_json(200, await _opened_room(self, token, self.account.id, self.viewer_ip()))

    async def delete(self, token: str) -> None:
        assert self.account is not None
        await room_links.revoke(self.ctx.db, self.account.id, token)
        self.send_empty(204)


class RoomPageHandler(ViewerIpMixin):
    db_deadline = None  # waits on other things between its database calls (a render)
    deferred_auth = True  # the page path checks the key, then the room link (rooms.reads)

    async def get(self, token: str, file_id: str, page: str) -> None:
        request = PageRequest(token, page, self.viewer_ip(), api_key=self.bearer_key(),
                              departure=self.departure, file_id=file_id)
        await self.ctx.pages.serve(request, self.send_page)


class RoomIndexPageHandler(ViewerBase):
    """GET /r/<token>: the numbered index; an unusable link gets the plain 404 page."""

    async def get(self, token: str) -> None:
        try:
            details = await _opened_room(self, token, None, self.client_ip())
        except NotFound:
            self.set_status(404)
            self.render("not_available.html")
            return
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


class RoomDocumentPageHandler(RoomDocumentBase):
    """GET /r/<token>/files/<fileId>: the document in the existing viewer."""

    async def get(self, token: str, file_id: str) -> None:
        try:
            opened = await self.document(token, file_id)
        except NotFound:
            self.set_status(404)
            self.render("not_available.html")
            return
        self.render("viewer.html", details=links.link_details(opened))


class RoomImageHandler(RoomDocumentBase):
    db_deadline = None  # waits on other things between its database calls (a render)

    async def get(self, token: str, file_id: str, page: str) -> None:
        request = PageRequest(token, page, self.client_ip(), departure=self.departure,
                              file_id=file_id)
        await self.ctx.pages.serve(request, self.send_page)


class RoomStatusHandler(RoomDocumentBase):
    """Polled by the open document: blanked once it leaves the link's scope or the room."""

    async def get(self, token: str, file_id: str) -> None:
        await self.document(token, file_id)
        self.send_json(200, {"active": True})


class RoomActivityHandler(RoomDocumentBase):
    """The viewer's visible-page time, counted for this reader and document."""

    async def post(self, token: str, file_id: str) -> None:
        await report_activity(self, await self.document(token, file_id))


ROUTES = [
    (r"/v1/room-views/([^/]+)", RoomViewHandler),
    (r"/v1/room-views/([^/]+)/files/([^/]+)/pages/([^/]+)", RoomPageHandler),
    (r"/r/([^/]+)", RoomIndexPageHandler),
    (r"/r/([^/]+)/files/([^/]+)", RoomDocumentPageHandler),
    (r"/r/([^/]+)/files/([^/]+)/pages/([^/]+)", RoomImageHandler),
    (r"/r/([^/]+)/files/([^/]+)/status", RoomStatusHandler),
    (r"/r/([^/]+)/files/([^/]+)/activity", RoomActivityHandler),
]

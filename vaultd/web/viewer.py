"""The hosted viewer (Option A): /v/<token>, its pages and its assets. The token is the
credential; no API key. Every response forbids framing, caching, sniffing and referrers."""

from __future__ import annotations

from pathlib import Path

from tornado.web import StaticFileHandler

from vaultd.errors import NotFound
from vaultd.services.analytics import engagement
from vaultd.services.common import access_log
from vaultd.services.gates import gated
from vaultd.services.links import links
from vaultd.services.links.links import OpenLink
from vaultd.services.pages.page_path import PageRequest
from vaultd.web.viewer_base import ViewerBase, protect
from vaultd.web.viewer_gates import guard

WEB_DIR = Path(__file__).resolve().parent
STATIC_DIR = WEB_DIR / "static"
TEMPLATE_DIR = WEB_DIR / "templates"


class ViewerPageHandler(ViewerBase):
    """The HTML page; an unusable link gets the same plain 404 page whatever the reason."""

    async def get(self, token: str) -> None:
        try:
            opened = await self.ctx.pages.open_link(token)
        except NotFound:
            self.not_available()
            return
        if "policy" in opened.link and await self.gated(token, opened):
            return
        await access_log.record(self.ctx.db, opened.account.id, opened.file["_id"], "view",
                                viewer_email=opened.link["viewerEmail"], ip=self.client_ip())
        await engagement.link_opened(self.ctx.db, opened, self.client_ip())
        self.render("viewer.html", details=links.link_details(opened))

    def not_available(self) -> None:
        self.set_status(404)
        self.render("not_available.html")

    async def gated(self, token: str, opened: OpenLink) -> bool:
        """The gate screens instead of the document, while gates are pending (web.viewer_gates)."""
        try:
            return await guard(self, token, gated.file_link(opened))
        except NotFound:  # spent by maxOpens as this open was counted
            self.not_available()
            return True


class ViewerImageHandler(ViewerBase):
    db_deadline = False  # waits on other things between its database calls
    async def get(self, token: str, page: str) -> None:
        request = PageRequest(token, page, self.client_ip(), departure=self.departure,
                              session=self.viewer_session())
        await self.ctx.pages.serve(request, self.send_page)


class ViewerStatusHandler(ViewerBase):
    """Polled by the open page so a revocation blanks it even when no page is loading; a gated
    link's answers only the session that passed its gates (as pages: 403 naming what is pending)."""

    async def get(self, token: str) -> None:
        await self.admitted_link(token)
        self.send_json(200, {"active": True})


class ViewerStaticHandler(StaticFileHandler):
    def set_default_headers(self) -> None:
        protect(self)

    def set_extra_headers(self, path: str) -> None:
        self.clear_header("Server")
        protect(self)

    def compute_etag(self) -> None:
        return None

    def get_modified_time(self) -> None:
        # no Last-Modified: with no-store and no ETag there is nothing to revalidate
        return None


ROUTES = [
    (r"/v/([^/]+)", ViewerPageHandler),
    (r"/v/([^/]+)/pages/([^/]+)", ViewerImageHandler),
    (r"/v/([^/]+)/status", ViewerStatusHandler),
]
STATIC_ROUTE = (r"/assets/(viewer(?:-activity|-gate)?\.(?:js|css))", ViewerStaticHandler,
                {"path": str(STATIC_DIR)})

"""View links over the API (Option B): create, details, pages, revoke."""

from __future__ import annotations

from vaultd.services import access_log, engagement, links
from vaultd.services.page_path import PageRequest
from vaultd.timefmt import iso_utc
from vaultd.web.base import BaseHandler


class ViewerIpMixin(BaseHandler):
    def viewer_ip(self) -> str | None:
        # An invalid value is ignored: never printed, never logged.
        return access_log.valid_ip(self.request.headers.get("x-viewer-ip"))


class CreateLinkHandler(BaseHandler):
    async def post(self) -> None:
        assert self.account is not None
        request = links.parse_link_request(self.json_body(), self.account)
        token, expires_at = await links.create_link(self.ctx.db, self.account, request)
        self.send_json(201, {"token": token, "url": f"{self.ctx.viewer_url}/v/{token}",
                             "expiresAt": iso_utc(expires_at)})


class LinkHandler(ViewerIpMixin):
    async def get(self, token: str) -> None:
        assert self.account is not None
        opened = await self.ctx.pages.open_link(token, self.account)
        await access_log.record(self.ctx.db, self.account.id, opened.file["_id"], "view",
                                viewer_email=opened.link["viewerEmail"], ip=self.viewer_ip())
        await engagement.link_opened(self.ctx.db, opened, self.viewer_ip())
        self.send_json(200, links.link_details(opened))

    async def delete(self, token: str) -> None:
        assert self.account is not None
        await links.revoke_link(self.ctx.db, self.account.id, token)
        self.send_empty(204)


class PageHandler(ViewerIpMixin):
    db_deadline = None  # waits on other things between its database calls
    deferred_auth = True  # the page path checks the key, with the link (services.page_path)

    async def get(self, token: str, page: str) -> None:
        request = PageRequest(token, page, self.viewer_ip(), api_key=self.bearer_key(),
                              departure=self.departure)
        await self.ctx.pages.serve(request, self.send_page)


class RevokeViewsHandler(BaseHandler):
    db_deadline = None  # waits on other things between its database calls
    async def post(self, file_id: str) -> None:
        assert self.account is not None
        revoked = await links.revoke_file_links(self.ctx.db, self.account.id, file_id,
                                                 self.ctx.instance_id)
        self.send_json(200, {"revoked": revoked})


ROUTES = [
    (r"/v1/views", CreateLinkHandler),
    (r"/v1/views/([^/]+)", LinkHandler),
    (r"/v1/views/([^/]+)/pages/([^/]+)", PageHandler),
    (r"/v1/files/([^/]+)/revoke-views", RevokeViewsHandler),
]

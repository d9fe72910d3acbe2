"""View links over the API (Option B): create, details, pages, revoke."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from vaultd.services.analytics import engagement, link_listing
from vaultd.services.common import access_log
from vaultd.services.files.files import PER_PAGE_DEFAULT, PER_PAGE_MAX
from vaultd.services.gates import sessions
from vaultd.services.gates.check import Gates
from vaultd.services.gates.policy import parse_policy, policy_json
from vaultd.services.links import link_expiry, links
from vaultd.services.pages.page_path import PageRequest
from vaultd.timefmt import iso_utc, utcnow
from vaultd.web.base import BaseHandler
from vaultd.web.files import parse_bounded_int
from vaultd.web.permissions import CHANGE, READ


class ViewerIpMixin(BaseHandler):
    def viewer_ip(self) -> str | None:
        # An invalid value is ignored: never printed, never logged.
        return access_log.valid_ip(self.request.headers.get("x-viewer-ip"))

    def viewer_session(self) -> str | None:
        # A gated link's viewer session (POST /v1/views/:token/sessions), as the proxy sends it.
        return self.request.headers.get("x-viewer-session")


class CreateLinkHandler(BaseHandler):
    async def post(self) -> None:
        assert self.account is not None
        body = self.json_body()
        request = links.parse_link_request(body, self.account)
        policy = await parse_policy(self.ctx.db, self.ctx.settings, self.account,
                                    body.get("policy"),
                                    utcnow() + timedelta(seconds=request.ttl_seconds))
        request = replace(request, policy=policy)
        token, expires_at = await links.create_link(self.ctx.db, self.account, request)
        self.send_json(201, {"token": token, "url": f"{self.ctx.viewer_url}/v/{token}",
                             "expiresAt": iso_utc(expires_at)})


class LinkHandler(ViewerIpMixin):
    async def get(self, token: str) -> None:
        assert self.account is not None
        opened = await self.ctx.pages.open_link(token, self.account)
        policy = opened.link.get("policy")
        Gates().admit_open(policy, self.viewer_ip())
        await access_log.record(self.ctx.db, self.account.id, opened.file["_id"], "view",
                                viewer_email=opened.link["viewerEmail"], ip=self.viewer_ip())
        await engagement.link_opened(self.ctx.db, opened, self.viewer_ip())
        details = links.link_details(opened)
        if policy is not None:  # a link without one answers exactly as the spec shows
            details["policy"] = policy_json(policy)
            details["sessions"] = await sessions.sessions_json(self.ctx.db, opened.link)
        self.send_json(200, details)

    async def delete(self, token: str) -> None:
        assert self.account is not None
        await links.revoke_link(self.ctx.db, self.account.id, token)
        self.send_empty(204)

    async def patch(self, token: str) -> None:
        """A new expiry, the same token (services.links.link_expiry)."""
        assert self.account is not None
        expires_at = await link_expiry.extend_by_token(self.ctx.db, self.account, token,
                                                       self.json_body())
        self.send_json(200, {"expiresAt": iso_utc(expires_at)})


class PageHandler(ViewerIpMixin):
    db_deadline = False  # waits on other things between its database calls
    deferred_auth = True  # the page path checks the key, with the link (services.pages.page_path)

    async def get(self, token: str, page: str) -> None:
        request = PageRequest(token, page, self.viewer_ip(), api_key=self.bearer_key(),
                              departure=self.departure, session=self.viewer_session())
        await self.ctx.pages.serve(request, self.send_page)


class RevokeViewsHandler(BaseHandler):
    db_deadline = False  # waits on other things between its database calls
    paced = False  # its steps are, one by one (services.links.revoke_jobs)
    async def post(self, file_id: str) -> None:
        assert self.account is not None
        revoked = await links.revoke_file_links(self.ctx.db, self.account.id, file_id,
                                                 self.ctx.instance_id, self.ctx.fair_share)
        self.send_json(200, {"revoked": revoked})


class FileLinksHandler(BaseHandler):
    """GET /v1/files/:id/views: the file's links, newest first (services.analytics.link_listing)."""

    async def get(self, file_id: str) -> None:
        assert self.account is not None
        page = parse_bounded_int(self.get_query_argument("page", None), "page", 1, 1, 10**9)
        per_page = parse_bounded_int(self.get_query_argument("perPage", None), "perPage",
                                     PER_PAGE_DEFAULT, 1, PER_PAGE_MAX)
        state = link_listing.parse_state(self.get_query_argument("state", None))
        self.send_json(200, await link_listing.list_file_links(
            self.ctx.db, self.account.id, file_id, page, per_page, state))


class FileLinkHandler(BaseHandler):
    async def delete(self, file_id: str, link_id: str) -> None:
        assert self.account is not None
        await links.revoke_link_id(self.ctx.db, self.account.id, file_id, link_id)
        self.send_empty(204)


ROUTES = [
    (r"/v1/views", CreateLinkHandler),
    (r"/v1/views/([^/]+)", LinkHandler),
    (r"/v1/views/([^/]+)/pages/([^/]+)", PageHandler),
    (r"/v1/files/([^/]+)/revoke-views", RevokeViewsHandler),
    (r"/v1/files/([^/]+)/views", FileLinksHandler),
    (r"/v1/files/([^/]+)/views/([^/]+)", FileLinkHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/views": {"POST": CHANGE},
    r"/v1/views/([^/]+)": {"GET": READ, "DELETE": CHANGE, "PATCH": CHANGE},
    r"/v1/views/([^/]+)/pages/([^/]+)": {"GET": READ},
    r"/v1/files/([^/]+)/revoke-views": {"POST": CHANGE},
    r"/v1/files/([^/]+)/views": {"GET": READ},
    r"/v1/files/([^/]+)/views/([^/]+)": {"DELETE": CHANGE},
}

"""Engagement over HTTP: time-on-page reports (hosted viewer and proxies) and the analytics API."""

from __future__ import annotations

from vaultd.services.analytics import analytics, analytics_report
from vaultd.services.links.links import OpenLink
from vaultd.web.base import BaseHandler
from vaultd.web.permissions import CHANGE, READ
from vaultd.web.viewer_base import ViewerBase
from vaultd.web.views import ViewerIpMixin


async def report_activity(handler: BaseHandler, opened: OpenLink) -> None:
    events = analytics.parse_activity(handler.json_body(), int(opened.file["pageCount"]))
    added = await analytics.add_time(handler.ctx.db, opened, events)
    handler.send_json(200, {"events": len(events), "seconds": added})


class ViewerActivityHandler(ViewerBase):
    """POST /v/<token>/activity: the hosted viewer's visible-page time (token is the credential;
    a gated link's also the cookie session that passed its gates, as for pages)."""

    async def post(self, token: str) -> None:
        await report_activity(self, await self.admitted_link(token))


class ApiActivityHandler(ViewerIpMixin):
    """POST /v1/views/:token/activity: the same report from a proxy (Option B); a gated link's
    needs the `x-viewer-session` that passed its gates, as its pages do."""

    async def post(self, token: str) -> None:
        assert self.account is not None
        opened = await self.ctx.pages.open_link(token, self.account)
        await self.ctx.pages.admit(opened, self.viewer_session(), self.viewer_ip())
        await report_activity(self, opened)


class ViewAnalyticsHandler(BaseHandler):
    async def get(self, token: str) -> None:
        assert self.account is not None
        # This process's latest pages of the account count (EngagementHook).
        await self.ctx.pages.settle(self.account.id)
        self.send_json(200, await analytics_report.view_analytics(
            self.ctx.db, self.account.id, token))


class FileAnalyticsHandler(BaseHandler):
    async def get(self, file_id: str) -> None:
        assert self.account is not None
        await self.ctx.pages.settle(self.account.id)
        self.send_json(200, await analytics_report.file_analytics(
            self.ctx.db, self.account.id, file_id))


ROUTES = [
    (r"/v/([^/]+)/activity", ViewerActivityHandler),
    (r"/v1/views/([^/]+)/activity", ApiActivityHandler),
    (r"/v1/views/([^/]+)/analytics", ViewAnalyticsHandler),
    (r"/v1/files/([^/]+)/analytics", FileAnalyticsHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/views/([^/]+)/activity": {"POST": CHANGE},
    r"/v1/views/([^/]+)/analytics": {"GET": READ},
    r"/v1/files/([^/]+)/analytics": {"GET": READ},
}

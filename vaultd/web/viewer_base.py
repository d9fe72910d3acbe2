"""What every hosted-viewer response shares: the headers that forbid framing, caching, sniffing
and referrers, the client's address, and the name of a gated link's session cookie."""

from __future__ import annotations

from typing import Any

from vaultd.services.links.links import OpenLink
from vaultd.web.base import BaseHandler
from vaultd.web.client_ip import viewer_ip
from vaultd.web.page_headers import protect_page

SESSION_COOKIE = "vaultd_session"  # the viewer session of a gated link (web.viewer_gates)

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def protect(handler: Any) -> None:
    protect_page(handler, CONTENT_SECURITY_POLICY, "no-referrer")


class ViewerBase(BaseHandler):
    public = True

    def set_default_headers(self) -> None:
        super().set_default_headers()
        protect(self)

    def client_ip(self) -> str | None:
        return viewer_ip(self.request, self.ctx.settings.proxy_trusted)

    def viewer_session(self) -> str | None:
        # A gated link's viewer session: the cookie `web.viewer_gates` set for this link.
        return self.get_cookie(SESSION_COOKIE)

    async def admitted_link(self, token: str) -> OpenLink:
        """The live link, for a request about its pages that is not one (status, activity): a
        gated link's cookie session must have passed every gate, as for its pages."""
        opened = await self.ctx.pages.open_link(token)
        await self.ctx.pages.admit(opened, self.viewer_session(), self.client_ip())
        return opened

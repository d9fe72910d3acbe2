"""The console's page of one file (`/console/files/<id>`): its details, a preview, the share
form, its links, time per page and the access log; and the two forms that read rather than
change: Share (CHANGE_CONTENT) and Preview (READ).

Preview: a short-lived link for the member themself, opened in the hosted viewer, so the pages
they see are watermarked with their own name and email and logged as their view, like any
reader's (docs/console.md, "A file"). Share renders the page again with the new link shown once
(its token is in no redirect, no log, no later page), and may mail it to the viewer.

Every read here is bounded: one page of links (`link_listing`), the access log's latest entries
by time ranges (`access_log.latest_for_file`, older ones on demand with `before`), the file's
per-page analytics."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from vaultd.errors import NotFound, VaultError
from vaultd.services.analytics import file_pages, link_listing
from vaultd.services.common import access_log
from vaultd.services.files import files
from vaultd.services.gates.policy import parse_policy
from vaultd.services.links import link_mail, links
from vaultd.timefmt import iso_utc, utcnow
from vaultd.web import console_share
from vaultd.web.console_files import KIND_LABELS, human_size, human_time
from vaultd.web.console_page import ConsolePage
from vaultd.web.console_time_chart import time_chart
from vaultd.web.files import parse_action, parse_before, parse_bounded_int
from vaultd.web.permissions import CHANGE, READ

LINKS_PER_PAGE = 20
# Access-log entries a page shows, "Older entries" reaching further: as many as the Activity
# page's. The API's page is 200 (`access_log.LATEST`); read and drawn, 200 rows were most of
# this page's time.
LOG_ENTRIES = 50
DEFAULT_EXPIRY_DAYS = 7
PREVIEW_SECONDS = 900  # the member's own preview link: long enough to read, then gone

class FilePageBase(ConsolePage):
    section = "files"

    async def file_page(self, file_id: str, status: int = 200, **extra: Any) -> None:
        """The page, as a GET shows it, with `extra` (a new link, the share form's values)."""
        assert self.account is not None
        doc = await files.get_file(self.ctx.db, self.account.id, file_id)
        links_page = parse_bounded_int(self.get_query_argument("linksPage", None),
                                       "linksPage", 1, 1, 10**6)
        action = parse_action(self.get_query_argument("action", None) or None)
        before = parse_before(self.get_query_argument("before", None) or None)
        listing = await link_listing.list_file_links(self.ctx.db, self.account.id, doc["_id"],
                                                     links_page, LINKS_PER_PAGE, None)
        await self.ctx.pages.settle(self.account.id)
        time_pages = await file_pages.totals(self.ctx.db, doc["_id"], int(doc["pageCount"]))
        entries = await access_log.latest_for_file(self.ctx.db, doc["_id"],
                                                   since=doc["createdAt"], before=before,
                                                   action=action,
                                                   kept_spans=doc.get("logSpans", {}),
                                                   count=LOG_ENTRIES)
        values: dict[str, Any] = {
            "file": files.file_json(doc), "views": listing["views"],
            "links_total": listing["total"], "links_page": links_page,
            "links_pages": max(1, -(-listing["total"] // LINKS_PER_PAGE)),
            "chart": time_chart(time_pages), "time_pages": time_pages,
            "entries": entries, "action": action or "", "actions": sorted(access_log.ACTIONS),
            "older": entries[-1]["at"] if len(entries) >= LOG_ENTRIES else None,
            "share_gates": await console_share.offered(self.ctx.db, self.account,
                                                       mail_on=bool(self.ctx.settings.smtp_host)),
            "human_size": human_size, "human_time": human_time, "kinds": KIND_LABELS,
            "gates_of": console_share.gates_of, "new_link": None, "mailed": None, "form": {},
            "error": None, "default_days": DEFAULT_EXPIRY_DAYS,
            "mail_on": bool(self.ctx.settings.smtp_host)}
        values.update(extra)
        self.page("file.html", doc["name"], status=status, **values)


class FilePage(FilePageBase):
    async def get(self, file_id: str) -> None:
        await self.file_page(file_id)


class ShareForm(FilePageBase):
    """Create link: the new URL shown once on the page, optionally mailed to the viewer."""

    async def get(self, file_id: str) -> None:
        # The address the form's answer shows: reloaded or bookmarked, it is the file's page.
        self.redirect(f"/console/files/{file_id}", status=303)

    def form(self) -> dict[str, str]:
        return {name: (self.get_body_argument(name, "") or "").strip()
                for name in console_share.share_fields()}

    async def post(self, file_id: str) -> None:
        form = self.form()
        try:
            await self.share(file_id, form)
        except VaultError as error:
            if not self.wants_html() or isinstance(error, NotFound):
                raise
            # The form again, with what was typed (never a secret) and why it was refused.
            await self.file_page(file_id, status=error.status, error=error.message,
                                 form=console_share.without_secrets(form))

    async def share(self, file_id: str, form: dict[str, str]) -> None:
        assert self.account is not None and self.signed_in is not None
        ttl = console_share.ttl_seconds(form, self.account, DEFAULT_EXPIRY_DAYS)
        body = {"fileId": file_id, "viewerEmail": form["viewerEmail"],
                "viewerName": form["viewerName"] or None, "ttlSeconds": ttl}
        request = links.parse_link_request(body, self.account)
        expires_at = utcnow() + timedelta(seconds=request.ttl_seconds)
        policy = await parse_policy(self.ctx.db, self.ctx.settings, self.account,
                                    console_share.form_policy(form, expires_at), expires_at)
        token, expires_at = await links.create_link(self.ctx.db, self.account,
                                                    replace(request, policy=policy))
        url = f"{self.ctx.viewer_url}/v/{token}"
        mailed = None
        if form["mailLink"] == "on":
            mailed = await link_mail.mail_link(self.ctx.settings, request, url, expires_at,
                                               self.signed_in.email)
        await self.file_page(file_id, status=201, mailed=mailed, new_link={
            "url": url, "viewer": request.viewer_email, "expiresAt": iso_utc(expires_at)})


class PreviewForm(ConsolePage):
    """A link for the member themself, then the hosted viewer (READ: every role may look)."""

    async def post(self, file_id: str) -> None:
        assert self.account is not None and self.signed_in is not None
        member = self.signed_in.member
        name = member["name"] if member and member.get("name") else self.signed_in.email
        ttl = max(PREVIEW_SECONDS, self.account.plan.minViewSeconds)
        request = links.parse_link_request(
            {"fileId": file_id, "viewerEmail": self.signed_in.email,
             "viewerName": name[:links.MAX_VIEWER_NAME], "ttlSeconds": ttl}, self.account)
        token, _ = await links.create_own_preview(self.ctx.db, self.account, request)
        self.redirect(f"{self.ctx.viewer_url}/v/{token}", status=303)


ROUTES = [
    (r"/console/files/([^/]+)", FilePage),
    (r"/console/files/([^/]+)/share", ShareForm),
    (r"/console/files/([^/]+)/preview", PreviewForm),
]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/files/([^/]+)": {"GET": READ},
    r"/console/files/([^/]+)/share": {"GET": READ, "POST": CHANGE},
    r"/console/files/([^/]+)/preview": {"POST": READ},  # a link for the member themself
}

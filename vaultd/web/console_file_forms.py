"""The forms of a file's page that change its links or the file itself: revoke one link, give
one a new expiry, revoke them all, delete the file. Each posts and redirects to the file's page
(or the Files page) with a flash line. The two that cannot be undone, revoke all and delete,
have a confirmation page of their own (a GET showing what will happen, whose button posts), so
the confirmation works without script and with the keyboard alone."""

from __future__ import annotations

from vaultd.services.files import deletions, files
from vaultd.services.links import link_expiry, links
from vaultd.web.console_file import DEFAULT_EXPIRY_DAYS
from vaultd.web.console_page import HOME_PATH, ConsolePage
from vaultd.web.files import parse_bounded_int
from vaultd.web.permissions import CHANGE, READ


def file_path(file_id: str) -> str:
    return f"/console/files/{file_id}"


class RevokeLinkForm(ConsolePage):
    async def post(self, file_id: str, link_id: str) -> None:
        assert self.account is not None
        await links.revoke_link_id(self.ctx.db, self.account.id, file_id, link_id)
        self.done(file_path(file_id.lower()), "link-revoked")


class ExtendLinkForm(ConsolePage):
    """A new expiry, counted in days from now, for the same token (services.links.link_expiry)."""

    async def post(self, file_id: str, link_id: str) -> None:
        assert self.account is not None
        days = parse_bounded_int(self.get_body_argument("days", None) or None,
                                 "New expiry (days from now)", DEFAULT_EXPIRY_DAYS, 1, 3650)
        await link_expiry.extend_by_id(self.ctx.db, self.account, file_id, link_id,
                                       {"ttlSeconds": days * 86400})
        self.done(file_path(file_id.lower()), "link-extended")


class ConfirmPage(ConsolePage):
    """A page asking to confirm what its form's POST then does."""

    section = "files"
    question = ""
    button = ""
    action = ""

    async def get(self, file_id: str) -> None:
        assert self.account is not None
        doc = await files.get_file(self.ctx.db, self.account.id, file_id)
        self.page("confirm.html", self.button, file=doc, question=self.question,
                  button=self.button, action=f"{file_path(doc['_id'])}/{self.action}",
                  back=file_path(doc["_id"]))


class RevokeAllPage(ConfirmPage):
    question = ("Revoke every active link of this file? Each viewer's next page is refused; "
                "the file stays, and new links can be made.")
    button = "Revoke all links"
    action = "revoke-all"
    db_deadline = False  # a job in batches, as the API's (services.links.revoke_jobs)
    paced = False

    async def post(self, file_id: str) -> None:
        assert self.account is not None
        await files.get_file(self.ctx.db, self.account.id, file_id)
        await links.revoke_file_links(self.ctx.db, self.account.id, file_id,
                                      self.ctx.instance_id, self.ctx.fair_share)
        self.done(file_path(file_id.lower()), "links-revoked")


class DeletePage(ConfirmPage):
    question = ("Delete this file for good? Its encrypted copy and every link are removed; "
                "readers' next page is refused. This cannot be undone.")
    button = "Delete file"
    action = "delete"

    async def post(self, file_id: str) -> None:
        assert self.account is not None
        await deletions.delete_file(self.ctx.db, self.ctx.store, self.account.id, file_id,
                                    self.ctx.instance_id)
        self.done(HOME_PATH, "file-deleted")


ROUTES = [
    (r"/console/files/([^/]+)/links/([^/]+)/revoke", RevokeLinkForm),
    (r"/console/files/([^/]+)/links/([^/]+)/extend", ExtendLinkForm),
    (r"/console/files/([^/]+)/revoke-all", RevokeAllPage),
    (r"/console/files/([^/]+)/delete", DeletePage),
]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/files/([^/]+)/links/([^/]+)/revoke": {"POST": CHANGE},
    r"/console/files/([^/]+)/links/([^/]+)/extend": {"POST": CHANGE},
    r"/console/files/([^/]+)/revoke-all": {"GET": READ, "POST": CHANGE},
    r"/console/files/([^/]+)/delete": {"GET": READ, "POST": CHANGE},
}

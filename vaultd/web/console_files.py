"""The console's Files page (`/console/files`): the account's files, newest first, a page at a
time, and the upload of one or many files (the page's script posts each to the API mirror,
`POST /console/api/files`, with a progress bar; `static/console/upload.js`).

The listing is the API's (`services.files.files.list_files`): read by time ranges, a page costs
what it shows however many files the account holds, and its total is the account's counter."""

from __future__ import annotations

from datetime import datetime
from math import ceil

from vaultd.services.files import files
from vaultd.web.console_page import ConsolePage
from vaultd.web.files import parse_bounded_int
from vaultd.web.permissions import READ

FILES_PER_PAGE = 25
MAX_PAGE = 10**6


def human_size(size: int) -> str:
    """Bytes in the unit a person reads at a glance (1 decimal, powers of 1024)."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_time(iso: str | None) -> str:
    """An API time (`2026-11-28T23:36:04.000Z`) as `2026-11-28 23:36 UTC`; "never" for none."""
    if not iso:
        return "never"
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M UTC")


KIND_LABELS = {"source": "View only", "delivery": "Deliverable"}


class FilesPage(ConsolePage):
    section = "files"

    async def get(self) -> None:
        assert self.account is not None
        page = parse_bounded_int(self.get_query_argument("page", None), "page", 1, 1, MAX_PAGE)
        listing = await files.list_files(self.ctx.db, self.account.id, page, FILES_PER_PAGE)
        pages = max(1, ceil(listing["total"] / FILES_PER_PAGE))
        self.page("files.html", "Files", files=listing["files"], total=listing["total"],
                  page_number=page, pages=pages, human_size=human_size,
                  human_time=human_time, kinds=KIND_LABELS)


ROUTES = [(r"/console/files", FilesPage)]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/files": {"GET": READ},
}

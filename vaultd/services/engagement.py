"""What the page path calls when a link is opened or a page served: the analytics aggregates,
and the `view.opened` / `view.completed` events they reveal (each exactly once per link)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultd.db import Db
from vaultd.services import analytics, webhook_events
from vaultd.services.links import OpenLink

if TYPE_CHECKING:  # the page path imports nothing of this module; only the type is needed
    from vaultd.services.page_path import SentPage

log = logging.getLogger("vaultd.analytics")


async def link_opened(db: Db, opened: OpenLink, ip: str | None) -> None:
    if await analytics.note_open(db, opened, ip):
        await webhook_events.opened_now(db, opened, ip)


async def page_served(db: Db, opened: OpenLink, page: int, ip: str | None) -> None:
    """Called once the page is on its way; a failure here must not withhold the page."""
    try:
        note = await analytics.note_page(db, opened, page, ip)
        if note.first_open:
            await webhook_events.opened_now(db, opened, ip)
        if note.completed:
            await webhook_events.completed_now(db, opened)
    except Exception:
        log.warning("page analytics not recorded (database unavailable?)")


@dataclass(frozen=True)
class EngagementHook:
    """The page path's hook (`PagePath.hooks`): every page sent counts in the link's analytics
    and may fire `view.opened` / `view.completed`."""

    db: Db

    async def page_sent(self, sent: SentPage) -> None:
        page = sent.page
        await page_served(self.db, page.link, page.number, page.request.ip)

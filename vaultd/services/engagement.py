"""What the page path calls when a link is opened or a page served: the analytics aggregates,
and the `view.opened` / `view.completed` events they reveal (each exactly once per link)."""

from __future__ import annotations

import logging

from vaultd.db import Db
from vaultd.services import analytics, webhook_events
from vaultd.services.links import OpenLink

log = logging.getLogger("vaultd.analytics")


async def link_opened(db: Db, opened: OpenLink, ip: str | None) -> None:
    if await analytics.note_open(db, opened, ip):
        await webhook_events.view_opened(db, opened, ip)


async def page_served(db: Db, opened: OpenLink, page: int, ip: str | None) -> None:
    """Called once the page is on its way; a failure here must not withhold the page."""
    try:
        note = await analytics.note_page(db, opened, page, ip)
        if note.first_open:
            await webhook_events.view_opened(db, opened, ip)
        if note.completed:
            await webhook_events.view_completed(db, opened)
    except Exception:
        log.warning("page analytics not recorded (database unavailable?)")

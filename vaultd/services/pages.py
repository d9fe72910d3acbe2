"""Serving one page of a link: watermark for this viewer and this moment, render in the pool.

The render is the long step, so a page request is ordered around it. What the render needs (link,
file, account) comes first, from records kept for a second while a document is being read, else
from the database. The checks run while the page renders: the caller's API key and the link read
from the database and found live (one round trip, `services.page_checks`), then the access-log
entry. Nothing is served before all of them pass, and when the render took long the link is read
once more, so a revoke or delete during a slow or queued render still stops the page.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from render.model import PixelBudget, WatermarkSpec
from render.pool import RenderPool
from render.tasks import render_page
from vaultd.broker import brokered
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.numbers import is_decimal
from vaultd.services import access_log, links, page_checks
from vaultd.services.blobs import BlobStore
from vaultd.services.links import LINK_NOT_FOUND, OpenLink
from vaultd.services.pool_calls import start_task
from vaultd.timefmt import paris_display, utcnow

log = logging.getLogger("vaultd.pages")

# A page is sent if its link was found live at most this long ago; a render that took longer
# (queued behind others, a heavy page) reads the link again first. A revoke therefore stops
# every page requested after it, and any page still rendering this long after it.
LINK_FRESH_SECONDS = 0.25


def parse_page_number(raw: str, page_count: int) -> int:
    if not is_decimal(raw) or len(raw) > 9 or not 1 <= int(raw) <= page_count:
        raise NotFound("page not found")
    return int(raw)


def watermark_for(opened: OpenLink, ip: str | None) -> WatermarkSpec:
    return WatermarkSpec(
        viewer_name=opened.link["viewerName"],
        viewer_email=opened.link["viewerEmail"],
        ip=ip,
        brand=opened.account.brand,
        displayed_at=paris_display(utcnow()),
    )


def budget_for(settings: Settings) -> PixelBudget:
    return PixelBudget(long_side=settings.render_long_side, max_pixels=settings.render_max_pixels)


async def serve_page(
    db: Db, store: BlobStore, pool: RenderPool, settings: Settings,
    token: str, raw_page: str, ip: str | None, api_key: str | None = None,
) -> bytes:
    """JPEG bytes of one freshly rendered, watermarked page; logs a `page` entry.

    `api_key` is the caller's key for a page over the API (Option B), None for the viewer's.

    The log entry is written during the render too, and withdrawn if the page is then not
    served: no entry for a page that never left.
    """
    kept = links.kept_link(token)
    opened: OpenLink | None = None
    try:
        opened = kept or await links.open_link(db, token)
        number = parse_page_number(raw_page, int(opened.file["pageCount"]))
        document = brokered(store, opened.file)
        render = asyncio.ensure_future(start_task(
            pool, render_page, document.source, number, watermark_for(opened, ip),
            budget_for(settings), document=document))
    except Exception:
        if api_key is not None:
            # A bad key is a 401 whatever else is wrong, and comes first.
            await page_checks.check_key(db, api_key, opened)
        raise
    try:
        opened = await _check(db, api_key, opened, kept is not None)
        entry = await access_log.record(db, opened.account.id, opened.file["_id"], "page",
                                        viewer_email=opened.link["viewerEmail"], ip=ip,
                                        page=number)
    except BaseException:
        # Refused before the page was needed: it renders to the end (stopping a worker mid-task
        # costs a respawn) and is dropped.
        render.add_done_callback(_drop_result)
        raise
    try:
        jpeg = await render
        if not await links.still_open(db, opened, fresh_for=LINK_FRESH_SECONDS):
            raise NotFound(LINK_NOT_FOUND)
    except BaseException:
        await _withdraw(db, entry)
        raise
    return jpeg


async def _check(db: Db, api_key: str | None, opened: OpenLink, kept: bool) -> OpenLink:
    """The caller's key, if any; and the link confirmed live if it came from the kept records
    (otherwise it was read just now)."""
    if api_key is not None and kept:
        return await page_checks.check_key_and_confirm(db, api_key, opened)
    if api_key is not None:
        await page_checks.check_key(db, api_key, opened)
    return await links.confirm(db, opened) if kept else opened


def _drop_result(render: asyncio.Future[Any]) -> None:
    if not render.cancelled():
        render.exception()  # retrieved, so asyncio does not report it as lost


async def _withdraw(db: Db, entry_id: str) -> None:
    try:
        await access_log.withdraw(db, entry_id)
    except Exception:  # the request's own error is the one to answer with
        log.warning("could not withdraw the log entry of a page that was not served")

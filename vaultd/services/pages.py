"""Serving one page of a link: watermark for this viewer and this moment, render in the pool.

The render is the long step, so a page request is ordered around it: what the render needs (link,
file, account) is read first; what it does not need (the caller's API key, the access-log entry)
is done while the page renders; when the render took long, the link is read once more, so a
revoke or delete during a slow or queued render still stops the page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from render.model import PixelBudget, WatermarkSpec
from render.pool import RenderPool
from render.tasks import render_page
from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.numbers import is_decimal
from vaultd.services import access_log
from vaultd.services.blobs import BlobStore
from vaultd.services.links import LINK_NOT_FOUND, OpenLink, still_open
from vaultd.services.pool_calls import start_task
from vaultd.timefmt import paris_display, utcnow

log = logging.getLogger("vaultd.pages")

# A page is sent if its link was found live at most this long ago; a render that took longer
# (queued behind others, a heavy page) reads the link again first. A revoke therefore stops
# every page requested after it, and any page still rendering this long after it.
LINK_FRESH_SECONDS = 0.25

# Awaited while the page renders; raises (Unauthorized, NotFound) to refuse the request.
Authorize = Callable[[OpenLink], Awaitable[None]]


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
    opened: OpenLink, raw_page: str, ip: str | None, authorize: Authorize | None = None,
) -> bytes:
    """JPEG bytes of one freshly rendered, watermarked page; logs a `page` entry.

    `authorize` (the API's key check) runs while the page renders and is awaited before any
    answer, a 404 for the page number included. The log entry is written during the render too,
    and withdrawn if the page is then not served: no entry for a page that never left.
    """
    try:
        number = parse_page_number(raw_page, int(opened.file["pageCount"]))
    except NotFound:
        if authorize is not None:
            await authorize(opened)
        raise
    render = asyncio.ensure_future(start_task(
        pool, render_page, store.source(opened.file), number, watermark_for(opened, ip),
        budget_for(settings)))
    try:
        if authorize is not None:
            await authorize(opened)
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
        if not await still_open(db, opened, fresh_for=LINK_FRESH_SECONDS):
            raise NotFound(LINK_NOT_FOUND)
    except BaseException:
        await _withdraw(db, entry)
        raise
    return jpeg


def _drop_result(render: asyncio.Future[Any]) -> None:
    if not render.cancelled():
        render.exception()  # retrieved, so asyncio does not report it as lost


async def _withdraw(db: Db, entry_id: str) -> None:
    try:
        await access_log.withdraw(db, entry_id)
    except Exception:  # the request's own error is the one to answer with
        log.warning("could not withdraw the log entry of a page that was not served")

"""Serving one page of a link: watermark for this viewer and this moment, render in the pool."""

from __future__ import annotations

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
from vaultd.services.pool_calls import run_task
from vaultd.timefmt import paris_display, utcnow


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
    opened: OpenLink, raw_page: str, ip: str | None,
) -> bytes:
    """JPEG bytes of one freshly rendered, watermarked page; logs a `page` entry."""
    number = parse_page_number(raw_page, int(opened.file["pageCount"]))
    source = store.source(opened.file)
    jpeg = await run_task(pool, render_page, source, number, watermark_for(opened, ip),
                          budget_for(settings))
    if not await still_open(db, opened):
        raise NotFound(LINK_NOT_FOUND)
    await access_log.record(db, opened.account.id, opened.file["_id"], "page",
                            viewer_email=opened.link["viewerEmail"], ip=ip, page=number)
    return jpeg

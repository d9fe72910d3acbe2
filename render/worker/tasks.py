"""A document's tasks, validation and a page's render, run inside render worker processes (never
in the server process).

The server schedules them through their entry points (`render.worker.entry_points`), sent to the
worker pickled; the result (JPEG bytes, a ValidationResult) and any error come back as plain data
(`render.wire.replies`), so an exception's class is one of a fixed table, never the worker's choice.
"""

from __future__ import annotations

from render.documents.brokered_reads import open_blob
from render.page import canvas
from render.page.rasterise import decode_image, render_pdf_canvas
from render.watermark import viewer_mark
from render.wire.model import (
    CONTENT_TYPES,
    PDF,
    DocumentSource,
    PageOutOfRange,
    PixelBudget,
    ValidationResult,
    WatermarkSpec,
)
from render.worker import page_cache, rendition
from render.worker.doc_cache import CACHE
from render.worker.validate import validate


def validate_document(
    source: DocumentSource, rendition_budget: PixelBudget | None = None
) -> ValidationResult:
    """Page count of a stored document; Unreadable if we could not render it.

    An image is validated by decoding it in full; with `rendition_budget`, the picture decoded
    at that size is kept for `render.worker.rendition.image_rendition` (the upload's next task).
    """
    _check_type(source)
    with open_blob(source) as blob:
        if rendition_budget is None or source.content_type == PDF:
            return validate(blob, source.content_type)
        image = decode_image(blob, source.content_type, rendition_budget)
    rendition.LAST.keep(source, rendition_budget, image)
    return ValidationResult(source.content_type, 1)


def render_page(
    source: DocumentSource,
    page_number: int,
    mark: WatermarkSpec,
    budget: PixelBudget,
    jpeg_quality: int = 80,
    page_cache_bytes: int | None = None,
) -> bytes:
    """One page as a watermarked JPEG, sized to `budget` (plus the watermark strip).

    A page this worker rendered before comes from its page cache (`render.worker.page_cache`, sized
    by `page_cache_bytes`, the server's `render.page_cache_mb`; None leaves it as it is).
    """
    _check_type(source)
    if isinstance(page_number, bool) or not isinstance(page_number, int):
        raise PageOutOfRange("page number must be an integer")
    if page_cache_bytes is not None and page_cache_bytes != page_cache.CACHE.capacity:
        page_cache.CACHE.resize(page_cache_bytes)
    key = page_cache.key_for(source, page_number, budget)
    kept = page_cache.CACHE.get(key) if page_cache.CACHE.capacity else None
    if kept is not None:
        plan = canvas.layout(kept.page, mark, budget)
        overlay = viewer_mark.prepare(mark, plan.width, plan.strip)
        paper = viewer_mark.paper_mark(overlay)
        page = canvas.from_rows(kept.pixels, plan, kept.grey, paper)
        grey, paper_marked = kept.grey, paper is not None
    else:
        page, plan, overlay = _rasterise(source, page_number, mark, budget)
        # Kept before any mark or watermark: the rows are this page's, not this view's.
        grey = page_cache.CACHE.capacity > 0 and page_cache.CACHE.admit(key) and _keep(
            key, page, plan)
        paper_marked = False
    viewer_mark.apply(page, overlay, plan.page[1], paper_marked)
    return canvas.jpeg(page.image, jpeg_quality, grey=grey)


def _keep(key: page_cache.PageKey, page: canvas.Canvas, plan: canvas.Layout) -> bool:
    """Keep the page's rows before the watermark, as L when it has no colour; True if so
    (the page is then encoded as a greyscale JPEG, now and on every later view)."""
    grey = canvas.grey_rows(page, plan)
    rows = grey if grey is not None else canvas.page_rows(page, plan)
    page_cache.CACHE.put(key, plan.page, plan.width, rows, grey=grey is not None)
    return grey is not None


def _check_type(source: DocumentSource) -> None:
    if source.content_type not in CONTENT_TYPES:
        raise ValueError(f"unsupported content type {source.content_type!r}")


def _rasterise(
    source: DocumentSource, number: int, mark: WatermarkSpec, budget: PixelBudget
) -> tuple[canvas.Canvas, canvas.Layout, viewer_mark.Overlay]:
    if source.content_type == PDF:
        # Only PDFium's part holds the document; the watermark and JPEG run outside the lease.
        with CACHE.lease(source) as cached:
            return render_pdf_canvas(cached.document, cached.stream, number, mark, budget)
    if number != 1:
        raise PageOutOfRange(f"page {number} is outside 1..1")
    with open_blob(source) as blob:
        page = decode_image(blob, source.content_type, budget)
    plan = canvas.layout(page.size, mark, budget)
    return canvas.from_image(page, plan), plan, viewer_mark.prepare(mark, plan.width, plan.strip)

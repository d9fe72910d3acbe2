"""Task entry points, executed inside render worker processes (never in the server process).

The server schedules these through `render.pool.RenderPool`; arguments and results pickle, and
so does every exception a task raises (an exception that would not unpickle in the parent would
be reported as a crashed worker, so `_portable` replaces it with a plain RuntimeError).
"""

from __future__ import annotations

import functools
import pickle
import resource
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from PIL import Image

from render import canvas, watermark
from render.blobs import open_blob
from render.doc_cache import CACHE
from render.model import (
    CONTENT_TYPES,
    PDF,
    DocumentSource,
    PageOutOfRange,
    PixelBudget,
    Unreadable,
    ValidationResult,
    WatermarkSpec,
)
from render.pages import MAX_SOURCE_PIXELS, decode_image, render_pdf_canvas
from render.validate import validate

__all__ = [
    "DocumentSource",
    "PageOutOfRange",
    "PixelBudget",
    "Unreadable",
    "ValidationResult",
    "WatermarkSpec",
    "render_page",
    "validate_document",
    "worker_init",
]

P = ParamSpec("P")
T = TypeVar("T")


def worker_init(memory_limit_bytes: int) -> None:
    """Pool initializer: cap the address space so a runaway allocation is a MemoryError."""
    if memory_limit_bytes > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = memory_limit_bytes if hard == resource.RLIM_INFINITY else min(
            memory_limit_bytes, hard
        )
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    # Pillow's own bomb check then agrees with ours (pages.MAX_SOURCE_PIXELS).
    Image.MAX_IMAGE_PIXELS = MAX_SOURCE_PIXELS


def _portable(function: Callable[P, T]) -> Callable[P, T]:
    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            if _round_trips(exc):
                raise
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None

    return wrapper


def _round_trips(exc: BaseException) -> bool:
    try:
        pickle.loads(pickle.dumps(exc))
        return True
    except Exception:
        return False


@_portable
def validate_document(source: DocumentSource) -> ValidationResult:
    """Page count of a stored document; Unreadable if we could not render it."""
    _check_type(source)
    with open_blob(source) as blob:
        return validate(blob, source.content_type)


@_portable
def render_page(
    source: DocumentSource,
    page_number: int,
    mark: WatermarkSpec,
    budget: PixelBudget,
    jpeg_quality: int = 80,
) -> bytes:
    """One page as a watermarked JPEG, sized to `budget` (plus the watermark strip)."""
    _check_type(source)
    if isinstance(page_number, bool) or not isinstance(page_number, int):
        raise PageOutOfRange("page number must be an integer")
    page, plan, overlay = _rasterise(source, page_number, mark, budget)
    watermark.apply(page, overlay, plan.page[1])
    return canvas.jpeg(page.image, jpeg_quality)


def _check_type(source: DocumentSource) -> None:
    if source.content_type not in CONTENT_TYPES:
        raise ValueError(f"unsupported content type {source.content_type!r}")


def _rasterise(
    source: DocumentSource, number: int, mark: WatermarkSpec, budget: PixelBudget
) -> tuple[canvas.Canvas, canvas.Layout, watermark.Overlay]:
    if source.content_type == PDF:
        # Only PDFium's part holds the document; the watermark and JPEG run outside the lease.
        with CACHE.lease(source) as cached:
            return render_pdf_canvas(cached.document, cached.stream, number, mark, budget)
    if number != 1:
        raise PageOutOfRange(f"page {number} is outside 1..1")
    with open_blob(source) as blob:
        page = decode_image(blob, source.content_type, budget)
    plan = canvas.layout(page.size, mark, budget)
    return canvas.from_image(page, plan), plan, watermark.prepare(mark, plan.width, plan.strip)

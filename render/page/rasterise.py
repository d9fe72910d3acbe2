"""Rasterising one page: a PDF page with PDFium, or a JPEG/PNG (a one-page document) with Pillow.

Both paths size the output from the budget before decoding anything large, and both return an
RGB image already flattened onto white.
"""

from __future__ import annotations

import functools
import struct
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import BinaryIO

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from render.documents.brokered_reads import GuardedStream, OpenedBlob
from render.page import canvas
from render.page.sizing import fit_scale, scaled_size
from render.watermark import viewer_mark
from render.wire.model import JPEG, PNG, PageOutOfRange, PixelBudget, Unreadable, WatermarkSpec

# Source images above this are refused at upload (a 100 MP RGBA decode is 400 MB). JPEGs are
# decoded at a reduced DCT scale anyway; PNGs have no such shortcut.
MAX_SOURCE_PIXELS = 100_000_000
WHITE = (255, 255, 255)
_PIL_FORMATS = {JPEG: "JPEG", PNG: "PNG"}
# Everything Pillow raises for damaged input. MemoryError is left alone on purpose: it means
# the worker's memory cap was hit, which the pool reports as such.
# (Pillow's plugins raise IndexError, TypeError and struct.error on some malformed headers.)
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError,
                  struct.error, Image.DecompressionBombError, Image.DecompressionBombWarning)


# --- PDF ----------------------------------------------------------------------------------------


def open_pdf(blob: OpenedBlob) -> tuple[pdfium.PdfDocument, GuardedStream]:
    """Open a PDF with PDFium reading through the decrypting stream (never the whole file)."""
    stream = blob.stream(swallow=True)
    try:
        document = pdfium.PdfDocument(stream)
    except pdfium.PdfiumError as exc:
        stream.close()
        stream.raise_pending()
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise Unreadable("the PDF is password-protected") from None
        raise Unreadable("the PDF is damaged or not a PDF") from None
    return document, stream


def render_pdf_canvas(
    document: pdfium.PdfDocument, stream: GuardedStream, number: int, mark: WatermarkSpec,
    budget: PixelBudget,
) -> tuple[canvas.Canvas, canvas.Layout, viewer_mark.Overlay]:
    """Page `number` (1-based) rendered into the final canvas, and the watermark for it, drawn
    on a helper thread while PDFium renders: PDFium runs without the GIL, so the two overlap
    and the page costs about the render alone."""
    _check_number(document, number)
    with _page(document, stream, number - 1) as page:
        width, height = page.get_size()
        plan = canvas.layout(scaled_size(width, height, fit_scale(width, height, budget)), mark,
                             budget)
        overlay = _helper().submit(viewer_mark.prepare, mark, plan.width, plan.strip)
        try:
            rendered = canvas.render_pdf(page, plan)
            stream.raise_pending()
        finally:
            prepared = overlay.result()  # never leave the helper drawing behind a failed render
        return rendered, plan, prepared


@functools.cache
def _helper() -> ThreadPoolExecutor:
    # One per worker process, started on first use (the server process never renders).
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="watermark")


def render_pdf_page(
    document: pdfium.PdfDocument, stream: GuardedStream, number: int, budget: PixelBudget
) -> Image.Image:
    """Render page `number` (1-based) scaled to the budget, on white (upload's thumbnail)."""
    _check_number(document, number)
    with _page(document, stream, number - 1) as page:
        # get_size() is the displayed size (after /Rotate), which is what render() allocates.
        width, height = page.get_size()
        scale = fit_scale(width, height, budget)
        bitmap = page.render(
            scale=scale, fill_color=(*WHITE, 255), rev_byteorder=True, may_draw_forms=False
        )
        try:
            stream.raise_pending()
            # convert() copies: the PIL image shares the bitmap's buffer, which close() frees.
            image: Image.Image = bitmap.to_pil().convert("RGB")
            return image
        finally:
            bitmap.close()


def _check_number(document: pdfium.PdfDocument, number: int) -> None:
    if not 1 <= number <= len(document):
        raise PageOutOfRange(f"page {number} is outside 1..{len(document)}")


@contextmanager
def _page(
    document: pdfium.PdfDocument, stream: GuardedStream, index: int
) -> Iterator[pdfium.PdfPage]:
    try:
        page = document[index]
    except pdfium.PdfiumError:
        stream.raise_pending()
        raise Unreadable(f"page {index + 1} of the PDF is damaged") from None
    try:
        yield page
    finally:
        page.close()


# --- JPEG and PNG -------------------------------------------------------------------------------


def decode_image(blob: OpenedBlob, content_type: str, budget: PixelBudget) -> Image.Image:
    """Fully decode the image, refusing bombs and damaged data; returns RGB scaled to budget."""
    stream = blob.buffered()
    try:
        with warnings.catch_warnings():
            # Pillow only warns between MAX_IMAGE_PIXELS and twice that; a warning is a refusal.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return _decode(stream, content_type, budget)
    except _DECODE_ERRORS:
        _raise_read_error(stream)
        raise Unreadable("the image is damaged or too large") from None
    finally:
        stream.close()


def _raise_read_error(stream: BinaryIO) -> None:
    # A storage failure under Pillow looks like OSError; re-raise it as itself, not as a bad file.
    raw = getattr(stream, "raw", None)
    if isinstance(raw, GuardedStream):
        raw.raise_pending()


# EXIF orientation -> the transpose that makes the picture upright (as ImageOps.exif_transpose).
_ORIENTATIONS = {
    2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE, 8: Image.Transpose.ROTATE_90,
}
_SWAPS_AXES = {Image.Transpose.TRANSPOSE, Image.Transpose.TRANSVERSE,
               Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_270}


def _decode(stream: BinaryIO, content_type: str, budget: PixelBudget) -> Image.Image:
    fmt = _PIL_FORMATS[content_type]
    if fmt == "PNG":
        _verify_png(stream)
    with Image.open(stream, formats=[fmt]) as image:
        _check_pixels(image.size)
        turn = _ORIENTATIONS.get(image.getexif().get(0x0112, 1))
        target = _stored_target(image.size, turn, budget)
        if fmt == "JPEG":
            # DCT scaling: decode at 1/2, 1/4 or 1/8 when that still covers the target size.
            image.draft(None, target)
        image.load()
        # Shrink first, then turn upright and flatten: only one full-size copy ever exists.
        small = _resizable(image).resize(target, Image.Resampling.LANCZOS, reducing_gap=2.0)
    return flatten(small.transpose(turn) if turn is not None else small)


def _stored_target(
    size: tuple[int, int], turn: Image.Transpose | None, budget: PixelBudget
) -> tuple[int, int]:
    """Budget size for the upright picture, expressed in the stored (unturned) orientation."""
    width, height = size
    if turn in _SWAPS_AXES:
        upright_w, upright_h = scaled_size(height, width, fit_scale(height, width, budget))
        return upright_h, upright_w
    return scaled_size(width, height, fit_scale(width, height, budget))


def _verify_png(stream: BinaryIO) -> None:
    # verify() checks every chunk's CRC without decoding; load() alone skips some of them.
    with Image.open(stream, formats=["PNG"]) as image:
        _check_pixels(image.size)
        image.verify()
    stream.seek(0)


def _check_pixels(size: tuple[int, int]) -> None:
    if size[0] * size[1] > MAX_SOURCE_PIXELS:
        raise Unreadable("the image dimensions are too large")


def _resizable(image: Image.Image) -> Image.Image:
    """A mode that resamples smoothly (palette and 1-bit images only resize by nearest pixel)."""
    if image.mode.startswith("I;16") or image.mode == "I":
        # 16-bit grey (scans): a plain convert("L") would clip everything above 255 to white.
        return image.convert("I").point(lambda v: v / 256).convert("L")
    has_alpha = "transparency" in image.info or image.mode in ("PA", "RGBA", "LA")
    if image.mode in ("RGB", "RGBA", "L", "LA") and "transparency" not in image.info:
        return image
    return image.convert("RGBA" if has_alpha else "RGB")


def flatten(image: Image.Image) -> Image.Image:
    """RGB on white, from any of the modes `_resizable` returns."""
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, WHITE)
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")

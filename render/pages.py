"""Rasterising one page: a PDF page with PDFium, or a JPEG/PNG (a one-page document) with Pillow.

Both paths size the output from the budget before decoding anything large, and both return an
RGB image already flattened onto white.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageOps

from render.blobs import GuardedStream, OpenedBlob
from render.model import JPEG, PNG, PageOutOfRange, PixelBudget, Unreadable
from render.sizing import fit_scale, scaled_size

# Source images above this are refused at upload (a 100 MP RGBA decode is 400 MB). JPEGs are
# decoded at a reduced DCT scale anyway; PNGs have no such shortcut.
MAX_SOURCE_PIXELS = 100_000_000
WHITE = (255, 255, 255)
_PIL_FORMATS = {JPEG: "JPEG", PNG: "PNG"}
# Everything Pillow raises for damaged input. MemoryError is left alone on purpose: it means
# the worker's memory cap was hit, which the pool reports as such.
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError,
                  Image.DecompressionBombError, Image.DecompressionBombWarning)


# --- PDF ----------------------------------------------------------------------------------------


def open_pdf(blob: OpenedBlob) -> tuple[pdfium.PdfDocument, GuardedStream]:
    """Open a PDF with PDFium reading through the decrypting stream (never the whole file)."""
    stream = blob.stream(swallow=True)
    try:
        document = pdfium.PdfDocument(stream)
    except pdfium.PdfiumError as exc:
        stream.raise_pending()
        stream.close()
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise Unreadable("the PDF is password-protected") from None
        raise Unreadable("the PDF is damaged or not a PDF") from None
    return document, stream


def page_count(document: pdfium.PdfDocument) -> int:
    return len(document)


def render_pdf_page(
    document: pdfium.PdfDocument, stream: GuardedStream, number: int, budget: PixelBudget
) -> Image.Image:
    """Render page `number` (1-based) scaled to the budget, on white."""
    if not 1 <= number <= len(document):
        raise PageOutOfRange(f"page {number} is outside 1..{len(document)}")
    with _page(document, number - 1) as page:
        # get_size() is the displayed size (after /Rotate), which is what render() allocates.
        scale = fit_scale(*page.get_size(), budget)
        bitmap = page.render(
            scale=scale, fill_color=(*WHITE, 255), rev_byteorder=True, may_draw_forms=False
        )
        try:
            stream.raise_pending()
            # convert() copies: the PIL image shares the bitmap's buffer, which close() frees.
            return bitmap.to_pil().convert("RGB")
        finally:
            bitmap.close()


@contextmanager
def _page(document: pdfium.PdfDocument, index: int) -> Iterator[pdfium.PdfPage]:
    page = document[index]
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


def _raise_read_error(stream: object) -> None:
    # A storage failure under Pillow looks like OSError; re-raise it as itself, not as a bad file.
    raw = getattr(stream, "raw", None)
    if isinstance(raw, GuardedStream):
        raw.raise_pending()


def _decode(stream: object, content_type: str, budget: PixelBudget) -> Image.Image:
    fmt = _PIL_FORMATS[content_type]
    if fmt == "PNG":
        _verify_png(stream)
    with Image.open(stream, formats=[fmt]) as image:
        _check_pixels(image.size)
        target = _oriented_target(image, budget)
        if fmt == "JPEG":
            # DCT scaling: decode at 1/2, 1/4 or 1/8 when that still covers the target size.
            image.draft(None, target)
        image.load()
        upright = ImageOps.exif_transpose(image)
        return flatten(upright).resize(
            scaled_size(*upright.size, fit_scale(*upright.size, budget)),
            Image.Resampling.LANCZOS,
            reducing_gap=2.0,
        )


def _verify_png(stream: object) -> None:
    # verify() checks every chunk's CRC without decoding; load() alone skips some of them.
    with Image.open(stream, formats=["PNG"]) as image:
        _check_pixels(image.size)
        image.verify()
    stream.seek(0)  # type: ignore[attr-defined]


def _check_pixels(size: tuple[int, int]) -> None:
    if size[0] * size[1] > MAX_SOURCE_PIXELS or min(size) < 1:
        raise Unreadable("the image dimensions are too large")


def _oriented_target(image: Image.Image, budget: PixelBudget) -> tuple[int, int]:
    width, height = image.size
    # EXIF orientations 5 to 8 swap the axes: size the decode for the upright image.
    if image.getexif().get(0x0112) in (5, 6, 7, 8):
        width, height = height, width
        target = scaled_size(width, height, fit_scale(width, height, budget))
        return target[1], target[0]
    return scaled_size(width, height, fit_scale(width, height, budget))


def flatten(image: Image.Image) -> Image.Image:
    """RGB on white, whatever the mode (alpha, palette transparency, 16-bit grey, CMYK)."""
    if image.mode.startswith("I;16") or image.mode == "I":
        # 16-bit grey (scans): convert("L") would clip everything above 255 to white.
        image = image.convert("I").point(lambda v: v / 256).convert("L")
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, WHITE)
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")

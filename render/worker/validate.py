"""Upload-time validation: is this a document we can open *and* render?

PDFs are checked twice. pikepdf (qpdf) gives the clear answers about structure and encryption;
then PDFium, the renderer, must open the file too, and renders page 1 as a tiny thumbnail. A PDF
that qpdf repairs but PDFium cannot render would otherwise be accepted and fail on every view.
The page count reported is PDFium's, since that is what page numbers are checked against.

Images are decoded in full by the same code that renders them (pixel cap, CRCs, truncation).
"""

from __future__ import annotations

from typing import BinaryIO, cast

import pikepdf

from render.documents.brokered_reads import OpenedBlob
from render.page.rasterise import decode_image, open_pdf, render_pdf_page
from render.wire.model import JPEG, PDF, PNG, PixelBudget, Unreadable, ValidationResult

_THUMBNAIL = PixelBudget(long_side=64, max_pixels=64 * 64)


def validate(blob: OpenedBlob, content_type: str) -> ValidationResult:
    if content_type == PDF:
        return ValidationResult(PDF, _validate_pdf(blob))
    if content_type in (JPEG, PNG):
        decode_image(blob, content_type, PixelBudget())
        return ValidationResult(content_type, 1)
    raise ValueError(f"unsupported content type {content_type!r}")


def _validate_pdf(blob: OpenedBlob) -> int:
    walked = _check_structure(blob)
    document, stream = open_pdf(blob)
    try:
        # PDFium trusts the page tree's /Count; qpdf walks the tree. A /Count that lies must not
        # become the page count (a viewer would lay out a million placeholders).
        count = min(len(document), walked)
        render_pdf_page(document, stream, 1, _THUMBNAIL)
        return count
    finally:
        document.close()
        stream.close()


def _check_structure(blob: OpenedBlob) -> int:
    """The number of pages qpdf finds by walking the page tree; Unreadable if broken."""
    stream = blob.stream()
    try:
        with pikepdf.open(cast(BinaryIO, stream)) as pdf:
            pages = len(pdf.pages)
            if pages < 1:
                raise Unreadable("the PDF has no pages")
            return pages
    except pikepdf.PasswordError:
        raise Unreadable("the PDF is password-protected") from None
    except pikepdf.PdfError:
        stream.raise_pending()
        raise Unreadable("the PDF is damaged or not a PDF") from None
    finally:
        stream.close()

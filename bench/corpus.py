"""The documents the benchmark uploads: real PDFs found on the machine, plus generated ones.

Real PDFs come from Debian's documentation (`/usr/share/doc`, some gzipped); which ones a
machine has depends on its packages, so the report names them. The generated documents are
deterministic (seeded):

- a 20-page, ~20 MB image-heavy PDF whose page 1 is a light text page (the *cover*) and whose
  other pages each carry a ~1 MB photographic JPEG;
- a small 2-page PDF whose page 1 is the same cover, so that "page 1 of a small PDF" against
  "page 1 of a 20 MB PDF" compares the same drawing and isolates the size of the file.
"""

from __future__ import annotations

import gzip
import io
import random
from dataclasses import dataclass
from pathlib import Path

import pikepdf
import pypdfium2 as pdfium
from PIL import Image, ImageDraw, ImageFilter

DOC_ROOTS = (Path("/usr/share/doc"),)
MAX_SYSTEM_BYTES = 20 << 20
LETTER = (612, 792)
TARGET_BYTES = 20_000_000


@dataclass(frozen=True)
class Document:
    name: str
    data: bytes
    pages: int

    @property
    def megabytes(self) -> float:
        return len(self.data) / 1e6


def _read_pdf(path: Path) -> bytes | None:
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return data if data.startswith(b"%PDF-") and len(data) <= MAX_SYSTEM_BYTES else None


def page_count(data: bytes) -> int:
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:
        return 0
    try:
        return len(document)
    finally:
        document.close()


def system_pdfs(limit: int) -> list[Document]:
    """Up to `limit` multi-page PDFs from the machine's documentation, smallest name first."""
    found: dict[str, Document] = {}
    for root in DOC_ROOTS:
        paths = sorted([*root.rglob("*.pdf"), *root.rglob("*.pdf.gz")]) if root.exists() else []
        for path in paths:
            name = path.name.removesuffix(".gz")
            data = _read_pdf(path)
            if name in found or data is None:
                continue
            pages = page_count(data)
            if pages >= 2:
                found[name] = Document(name, data, pages)
    return sorted(found.values(), key=lambda d: d.name)[:limit]


# --- generated documents --------------------------------------------------------------------


def _cover_content() -> bytes:
    """A typical light document page: a heading, paragraphs of text, a coloured rule."""
    rng = random.Random(11)
    ops = [b"BT /F1 26 Tf 72 720 Td (Quarterly report - confidential) Tj ET",
           b"0.2 0.4 0.8 rg 72 700 468 3 re f 0 g"]
    words = ["revenue", "margin", "forecast", "client", "contract", "delivery", "review", "audit",
             "schedule", "quarter", "budget", "risk", "plan", "approval", "figures", "summary"]
    y = 670
    for _ in range(34):
        line = " ".join(rng.choice(words) for _ in range(12))
        ops.append(f"BT /F1 11 Tf 72 {y} Td ({line}) Tj ET".encode())
        y -= 17
    return b"\n".join(ops)


def _font(pdf: pikepdf.Pdf) -> pikepdf.Object:
    return pdf.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica))


def _add_page(pdf: pikepdf.Pdf, content: bytes, resources: pikepdf.Dictionary) -> None:
    pdf.pages.append(pikepdf.Page(pikepdf.Dictionary(
        Type=pikepdf.Name.Page, MediaBox=[0, 0, *LETTER], Resources=resources,
        Contents=pdf.make_stream(content))))


def _photo_jpeg(seed: int, size: tuple[int, int], quality: int) -> bytes:
    """A photograph-like picture (gradients, shapes, grain) that JPEG cannot shrink much."""
    rng = random.Random(seed)
    base = Image.linear_gradient("L").resize(size)
    red, green = base.rotate(rng.choice((0, 90, 180, 270))), base.transpose(
        Image.Transpose.FLIP_LEFT_RIGHT)
    image = Image.merge("RGB", (red, green, base.rotate(45)))
    draw = ImageDraw.Draw(image)
    for _ in range(40):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        r = rng.randrange(20, 200)
        draw.ellipse((x - r, y - r, x + r, y + r),
                     fill=(rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    image = image.filter(ImageFilter.GaussianBlur(2))
    grain = Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
    image = Image.blend(image, grain, 0.35)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _image_page(pdf: pikepdf.Pdf, font: pikepdf.Object, jpeg: bytes, size: tuple[int, int],
                number: int) -> None:
    image = pdf.make_stream(jpeg, Type=pikepdf.Name.XObject, Subtype=pikepdf.Name.Image,
                            Width=size[0], Height=size[1], ColorSpace=pikepdf.Name.DeviceRGB,
                            BitsPerComponent=8, Filter=pikepdf.Name.DCTDecode)
    content = (b"q 468 0 0 351 72 360 cm /Im0 Do Q "
               + f"BT /F1 14 Tf 72 320 Td (Figure {number}: site photograph) Tj ET".encode())
    resources = pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font),
                                   XObject=pikepdf.Dictionary(Im0=image))
    _add_page(pdf, content, resources)


def _build(pages: int, jpeg_bytes: int) -> bytes:
    pdf = pikepdf.new()
    font = _font(pdf)
    _add_page(pdf, _cover_content(), pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font)))
    size = (1600, 1200)
    quality = 92
    for number in range(2, pages + 1):
        jpeg = _photo_jpeg(number, size, quality)
        while len(jpeg) > jpeg_bytes * 1.15 and quality > 60:  # aim near the size asked for
            quality -= 4
            jpeg = _photo_jpeg(number, size, quality)
        _image_page(pdf, font, jpeg, size, number)
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def image_heavy_pdf(pages: int = 20, target: int = TARGET_BYTES) -> Document:
    """`pages` pages, about `target` bytes: a text cover, then one large photograph per page."""
    per_page = target // (pages - 1)
    data = _build(pages, per_page)
    if len(data) < target * 0.9:  # pictures compressed better than expected: make them larger
        data = _build(pages, int(per_page * target / len(data)))
    return Document("generated-20-page-images.pdf", data, pages)


def small_pdf() -> Document:
    """Two light pages; page 1 is the same cover as the image-heavy PDF's."""
    pdf = pikepdf.new()
    font = _font(pdf)
    resources = pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font))
    _add_page(pdf, _cover_content(), resources)
    _add_page(pdf, b"BT /F1 24 Tf 72 720 Td (Appendix) Tj ET", resources)
    out = io.BytesIO()
    pdf.save(out)
    return Document("generated-small.pdf", out.getvalue(), 2)

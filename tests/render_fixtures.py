"""Test documents built in memory, and a helper that stores one as a real encrypted blob.

Every builder is deterministic (seeded), small, and produces the exact defect it is named after.
"""

from __future__ import annotations

import io
import random
import struct
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pikepdf
from PIL import Image, ImageDraw

from backends.local import LocalBackend
from render.documents.brokered_reads import ReadAt, install_opener
from render.wire.model import JPEG as JPEG  # re-exported: tests name content types as fx.PDF etc.
from render.wire.model import PDF as PDF
from render.wire.model import PNG as PNG
from render.wire.model import DocumentSource, WatermarkSpec
from vaultd.crypto.blob_format import BlobEncryptor, RangeReader, blob_context, new_data_key

LETTER = (612, 792)


# --- PDFs ---------------------------------------------------------------------------------------


def _save(pdf: pikepdf.Pdf, **options: Any) -> bytes:
    out = io.BytesIO()
    pdf.save(out, **options)
    return out.getvalue()


def _page(pdf: pikepdf.Pdf, size: tuple[float, float], content: bytes) -> pikepdf.Page:
    font = pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica
    )
    return pikepdf.Page(pikepdf.Dictionary(
        Type=pikepdf.Name.Page,
        MediaBox=[0, 0, size[0], size[1]],
        Resources=pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=pdf.make_indirect(font))),
        Contents=pdf.make_stream(content),
    ))


def _text(size: tuple[float, float], text: str) -> bytes:
    font_size, x, y = min(size) / 8, size[0] * 0.1, size[1] * 0.5
    return f"BT /F1 {font_size:.4f} Tf {x:.4f} {y:.4f} Td ({text}) Tj ET".encode()


def text_pdf(pages: int = 3, size: tuple[float, float] = LETTER, rotate: int = 0) -> bytes:
    """`pages` pages, each showing "Page N" in large Helvetica."""
    pdf = pikepdf.new()
    for number in range(1, pages + 1):
        page = _page(pdf, size, _text(size, f"Page {number}"))
        if rotate:
            page.obj.Rotate = rotate
        pdf.pages.append(page)
    return _save(pdf)


def huge_page_pdf() -> bytes:
    return text_pdf(1, (14400, 14400))  # 200 x 200 inches, the PDF maximum


def tiny_page_pdf() -> bytes:
    return text_pdf(1, (1, 1))


def rotated_pdf() -> bytes:
    return text_pdf(1, LETTER, rotate=90)  # portrait MediaBox, displayed landscape


def solid_pdf(gray: float, size: tuple[float, float] = LETTER) -> bytes:
    """One page filled with a grey level (0 black, 1 white)."""
    pdf = pikepdf.new()
    fill = f"{gray} g 0 0 {size[0]} {size[1]} re f".encode()
    pdf.pages.append(_page(pdf, size, fill))
    return _save(pdf)


def heavy_pdf(pages: int = 12, side: int = 300) -> bytes:
    """Pages each carrying an uncompressed noise image (~270 kB), so a file is large."""
    rng = random.Random(7)
    pdf = pikepdf.new()
    for number in range(1, pages + 1):
        image = pdf.make_stream(
            rng.randbytes(side * side * 3),
            Type=pikepdf.Name.XObject, Subtype=pikepdf.Name.Image, Width=side, Height=side,
            ColorSpace=pikepdf.Name.DeviceRGB, BitsPerComponent=8,
        )
        draw = b"q 300 0 0 300 150 300 cm /Im0 Do Q " + _text(LETTER, f"P{number}")
        page = _page(pdf, LETTER, draw)
        page.obj.Resources.XObject = pikepdf.Dictionary(Im0=image)
        pdf.pages.append(page)
    return _save(pdf, compress_streams=False)


def encrypted_pdf() -> bytes:
    pdf = pikepdf.open(io.BytesIO(text_pdf(1)))
    return _save(pdf, encryption=pikepdf.Encryption(user="u", owner="o"))


def corrupt_pdf() -> bytes:
    """A PDF header followed by noise: recognised as a PDF, readable as nothing."""
    return b"%PDF-1.7\n" + random.Random(1).randbytes(4000) + b"\n%%EOF\n"


# --- images -------------------------------------------------------------------------------------


def photo(size: tuple[int, int] = (800, 600)) -> Image.Image:
    """A colourful, busy picture: gradients plus shapes."""
    image = Image.linear_gradient("L").resize(size).convert("RGB")
    r, g, b = image.split()
    image = Image.merge("RGB", (r, g.transpose(Image.Transpose.FLIP_TOP_BOTTOM), b.rotate(90)))
    draw = ImageDraw.Draw(image)
    for i in range(12):
        box = (i * size[0] // 14, i * size[1] // 16, i * size[0] // 14 + 60, i * size[1] // 16 + 60)
        draw.ellipse(box, fill=((i * 40) % 256, 200 - i * 10, (i * 90) % 256))
    return image


def jpeg(size: tuple[int, int] = (800, 600), quality: int = 90) -> bytes:
    out = io.BytesIO()
    photo(size).save(out, "JPEG", quality=quality)
    return out.getvalue()


def big_png(size: tuple[int, int] = (4000, 2400)) -> bytes:
    """An opaque photo; at the default size, 9.6 megapixels: more than two pages' worth at the
    default budget (render.worker.rendition), so an upload of it also stores a rendition."""
    out = io.BytesIO()
    photo(size).save(out, "PNG")
    return out.getvalue()


def png(size: tuple[int, int] = (640, 480)) -> bytes:
    """RGBA with a transparent half, to exercise flattening onto white."""
    image = photo(size).convert("RGBA")
    alpha = Image.new("L", size, 255)
    ImageDraw.Draw(alpha).rectangle((0, 0, size[0] // 2, size[1]), fill=0)
    image.putalpha(alpha)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def grey16_png(size: tuple[int, int] = (300, 200)) -> bytes:
    """A 16-bit greyscale scan: a left-to-right ramp over the full 0..65535 range."""
    ramp = Image.linear_gradient("L").rotate(90).resize(size)
    image = ramp.convert("I").point(lambda v: v * 257).convert("I;16")
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def palette_png(size: tuple[int, int] = (200, 200)) -> bytes:
    """A palette image whose colour 0 is transparent (the left half) and colour 1 black."""
    image = Image.new("P", size, 1)
    image.putpalette([255, 0, 0, 0, 0, 0])
    ImageDraw.Draw(image).rectangle((0, 0, size[0] // 2 - 1, size[1]), fill=0)
    out = io.BytesIO()
    image.save(out, "PNG", transparency=0)
    return out.getvalue()


def sideways_jpeg(size: tuple[int, int] = (800, 600)) -> bytes:
    """Stored landscape with EXIF Orientation 6: displayed portrait, as phones write them."""
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    photo(size).save(out, "JPEG", quality=90, exif=exif)
    return out.getvalue()


def truncated_jpeg() -> bytes:
    data = jpeg((1200, 900))
    return data[: len(data) * 6 // 10]


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def png_bomb(side: int = 60_000) -> bytes:
    """A valid-looking 1-bit PNG declaring side x side pixels (3.6 GP) in a few hundred bytes."""
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * (1 + side // 8) * 64, 9)  # only the first rows; enough to lure
    chunks = _chunk(b"IHDR", header) + _chunk(b"IDAT", rows) + _chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + chunks


def png_bad_crc() -> bytes:
    data = bytearray(png((64, 64)))
    idat = data.index(b"IDAT")
    length = struct.unpack(">I", data[idat - 4 : idat])[0]
    data[idat + 4 + length] ^= 0xFF  # first byte of the IDAT chunk's CRC
    return bytes(data)


# --- storage ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StoredBlob:
    path: Path
    key: bytes
    context: bytes


# What in-process tests render: cache key -> the local blob, read through the real RangeReader
# (a worker process asks the server's broker instead).
_STORED: dict[str, _StoredBlob] = {}


def _local_opener(source: DocumentSource) -> ReadAt:
    stored = _STORED[source.cache_key]

    def read_at(offset: int, length: int) -> bytes:
        with stored.path.open("rb") as blob:
            blob.seek(offset)
            return blob.read(length)

    reader = RangeReader(read_at, stored.path.stat().st_size, stored.key, stored.context,
                         source.plaintext_size)
    return reader.read


install_opener(_local_opener)


def encrypt_to_local(tmp_path: Path, plaintext: bytes, content_type: str) -> DocumentSource:
    """Store `plaintext` as a real encrypted blob under `tmp_path`; the source to render it."""
    file_id = str(uuid.uuid4())
    key, context = new_data_key(), blob_context("acct-test", file_id)
    encryptor = BlobEncryptor(key, context)
    blob = encryptor.update(plaintext) + encryptor.finalize()
    backend = LocalBackend(tmp_path)
    (backend.root / file_id).write_bytes(blob)
    _STORED[file_id] = _StoredBlob(backend.root / file_id, key, context)
    return DocumentSource(content_type=content_type, plaintext_size=encryptor.plaintext_size,
                          cache_key=file_id, version=file_id)


def blob_path(source: DocumentSource) -> Path:
    return _STORED[source.cache_key].path


def data_key(source: DocumentSource) -> bytes:
    return _STORED[source.cache_key].key


def mark(name: str = "Alice Martin", email: str = "alice@example.com",
         ip: str | None = "203.0.113.7", brand: str = "Acme Legal",
         when: str = "2026-11-22 14:05:09 CET (UTC+01:00)") -> WatermarkSpec:
    return WatermarkSpec(viewer_name=name, viewer_email=email, ip=ip, brand=brand,
                         displayed_at=when)



class LocalDocument:
    """A broker for pool tests: serves the plaintext of one local blob, as vaultd.broker does."""

    def __init__(self, source: DocumentSource) -> None:
        self._source = source
        self.path = blob_path(source)
        self.size = source.plaintext_size
        self.reads: list[tuple[int, int]] = []

    async def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return _local_opener(self._source)(offset, length)

    async def check(self) -> None:
        if not self.path.exists():
            raise FileNotFoundError("the blob is gone")


def brokered(source: DocumentSource) -> LocalDocument:
    return LocalDocument(source)

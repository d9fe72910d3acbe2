"""Test documents made in memory: real PDFs, JPEGs and PNGs, and broken ones."""

from __future__ import annotations

import io
import struct
import zlib
from functools import lru_cache

import pikepdf
from PIL import Image, ImageDraw


@lru_cache(maxsize=32)
def pdf(pages: int = 1) -> bytes:
    """A text PDF, one visible heading per page (Helvetica), A4."""
    document = pikepdf.new()
    font = document.make_indirect(
        pikepdf.Dictionary(
            Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica
        )
    )
    for number in range(1, pages + 1):
        text = f"BT /F1 36 Tf 72 720 Td (Page {number} of {pages}) Tj ET".encode()
        body = text + b"\n0.2 0.4 0.8 rg 72 100 450 500 re f"
        page = pikepdf.Dictionary(
            Type=pikepdf.Name.Page,
            MediaBox=[0, 0, 595, 842],
            Resources=pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font)),
            Contents=document.make_stream(body),
        )
        document.pages.append(pikepdf.Page(page))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _image(fmt: str, size: tuple[int, int] = (640, 480)) -> bytes:
    image = Image.new("RGB", size, (240, 240, 230))
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 40, size[0] - 40, size[1] - 40), outline=(20, 60, 160), width=8)
    draw.text((60, 60), "vaultd test image", fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


@lru_cache(maxsize=4)
def jpeg() -> bytes:
    return _image("JPEG")


@lru_cache(maxsize=4)
def png() -> bytes:
    return _image("PNG")


def encrypted_pdf() -> bytes:
    document = pikepdf.open(io.BytesIO(pdf(2)))
    out = io.BytesIO()
    document.save(out, encryption=pikepdf.Encryption(user="secret", owner="owner"))
    return out.getvalue()


def truncated_pdf() -> bytes:
    data = pdf(3)
    return data[: len(data) // 3]


def truncated_jpeg() -> bytes:
    data = jpeg()
    return data[: len(data) // 2]


def _png_chunk(kind: bytes, payload: bytes, crc: int | None = None) -> bytes:
    crc = zlib.crc32(kind + payload) if crc is None else crc
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bomb() -> bytes:
    """A tiny file declaring 60000 x 60000 pixels (3.6 gigapixels)."""
    header = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"\0" * 4096)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", rows)
        + _png_chunk(b"IEND", b"")
    )


def png_bad_crc() -> bytes:
    data = bytearray(png())
    data[29] ^= 0xFF  # inside the IHDR CRC
    return bytes(data)


def png_of_size(size: int) -> bytes:
    """A valid PNG of exactly `size` bytes, padded with a text chunk."""
    base = png()
    iend = base.rindex(b"IEND") - 4
    padding = size - len(base) - 12 - len(b"Comment\0")
    assert padding >= 0, "size too small for the base image"
    text = _png_chunk(b"tEXt", b"Comment\0" + b"x" * padding)
    data = base[:iend] + text + base[iend:]
    assert len(data) == size
    return data


@lru_cache(maxsize=2)
def slow_pdf(shapes: int = 24_000) -> bytes:
    """One page that PDFium takes a long time to draw: many thin stroked curves.

    About 3 s on the 2-core machine: tests that kill, time out or revoke a render count on it
    still running a second after the request (8,000 curves took 0.98 s, too close).
    """
    document = pikepdf.new()
    ops = [b"0.5 w"]
    for i in range(shapes):
        x, y = (i * 37) % 595, (i * 53) % 842
        ops.append(
            b"%d %d m %d %d %d %d %d %d c S"
            % (x, y, x + 40, y + 7, x + 3, y + 60, 595 - x, 842 - y)
        )
    page = pikepdf.Dictionary(
        Type=pikepdf.Name.Page,
        MediaBox=[0, 0, 595, 842],
        Contents=document.make_stream(b"\n".join(ops)),
    )
    document.pages.append(pikepdf.Page(page))
    out = io.BytesIO()
    document.save(out, compress_streams=True)
    return out.getvalue()

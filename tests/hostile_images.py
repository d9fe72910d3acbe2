"""Hostile images, polyglots and impostors for the upload corpus (see tests/hostile_corpus.py)."""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Iterator

from PIL import Image, ImageDraw

from tests.hostile_corpus import (
    EITHER,
    PDF_OK,
    REFUSED,
    UNSUPPORTED,
    Case,
    flip_bits,
    good_pdf,
    zlib_zeros,
)

# --- images -------------------------------------------------------------------------------------


def _chunk(tag: bytes, data: bytes, crc: int | None = None) -> bytes:
    crc = zlib.crc32(tag + data) if crc is None else crc
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc & 0xFFFFFFFF)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_declaring(width: int, height: int, depth: int = 1, colour: int = 0,
                  rows: int = 64, interlace: int = 0) -> bytes:
    """A PNG that declares `width` x `height` but carries only the first `rows` rows (all of
    them, zero-filled, when `rows` >= `height`: the zeros compress about 1000 to 1)."""
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    bits = depth * channels
    if interlace:  # Adam7: seven sub-images, each row with its own filter byte
        passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                  (1, 0, 2, 2), (0, 1, 1, 2)]
        size = sum(-(-(height - y) // dy) * (1 + -(-(-(-(width - x) // dx) * bits) // 8))
                   for x, y, dx, dy in passes if width > x and height > y)
    else:
        size = (1 + -(-width * bits // 8)) * min(rows, height)
    data = zlib_zeros(max(size, 1))
    return (PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data)
            + _chunk(b"IEND", b""))


def picture(fmt: str, size: tuple[int, int] = (320, 240), **options: object) -> bytes:
    image = Image.new("RGB", size, (235, 240, 245))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, size[0] - 10, size[1] - 10), outline=(200, 30, 30), width=6)
    draw.line((0, 0, size[0], size[1]), fill=(0, 0, 160), width=4)
    out = io.BytesIO()
    image.save(out, fmt, **options)  # type: ignore[arg-type]
    return out.getvalue()


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        chunks.append((data[at + 4 : at + 8], data[at + 8 : at + 8 + length]))
        at += 12 + length
    return chunks


def png_from(chunks: list[tuple[bytes, bytes]]) -> bytes:
    return PNG_SIGNATURE + b"".join(_chunk(tag, body) for tag, body in chunks)


def png_cases() -> Iterator[Case]:
    good = picture("PNG")
    chunks = png_chunks(good)
    yield Case("png-bomb-60000-square", png_declaring(60_000, 60_000), REFUSED)
    yield Case("png-bomb-2147483647-wide", png_declaring(2**31 - 1, 1, rows=1), REFUSED)
    yield Case("png-bomb-rgba16-20000-square", png_declaring(20_000, 20_000, 16, 6, rows=4),
               REFUSED)
    yield Case("png-zero-width", png_declaring(0, 100), REFUSED)
    # 100 MP of interlaced RGBA, all rows present: exactly at the pixel cap, so it is decoded in
    # full (400 MB in 390 kB). Slow and large, but legal: accepted, or refused as unreadable.
    yield Case("png-rgba-10000-square-interlaced", png_declaring(
        10_000, 10_000, 8, 6, rows=10_000, interlace=1), EITHER)
    yield Case("png-signature-only", PNG_SIGNATURE, REFUSED)
    ihdr_crc = good[:29] + bytes([good[29] ^ 0xFF]) + good[30:]
    yield Case("png-wrong-crc-in-ihdr", ihdr_crc, REFUSED)
    idat = good.index(b"IDAT")
    (idat_len,) = struct.unpack(">I", good[idat - 4 : idat])
    crc_at = idat + 4 + idat_len
    yield Case("png-wrong-crc-in-idat", good[:crc_at] + bytes([good[crc_at] ^ 0x01])
               + good[crc_at + 1 :], REFUSED)
    yield Case("png-truncated-mid-idat", good[: idat + idat_len // 2], REFUSED)
    yield Case("png-without-iend", good[: good.rindex(b"IEND") - 4], EITHER)
    garbage = [(t, random.Random(9).randbytes(len(b)) if t == b"IDAT" else b) for t, b in chunks]
    yield Case("png-idat-not-zlib-with-valid-crc", png_from(garbage), REFUSED)
    yield Case("png-chunk-length-2147483647", good[:33] + struct.pack(">I", 2**31 - 1) + b"tEXt"
               + b"x" * 64, REFUSED)
    ztxt = zlib_zeros(64 << 20, ord("A"))
    bomb_text = [*chunks[:1], (b"zTXt", b"Comment\0\0" + ztxt), *chunks[1:]]
    yield Case("png-ztxt-decompresses-to-64-mb", png_from(bomb_text), EITHER)
    iccp = [*chunks[:1], (b"iCCP", b"icc\0\0" + zlib_zeros(64 << 20)), *chunks[1:]]
    yield Case("png-iccp-decompresses-to-64-mb", png_from(iccp), EITHER)
    many = chunks[:1] + [(b"tEXt", b"k\0v")] * 20_000 + chunks[1:]
    yield Case("png-20000-text-chunks", png_from(many), EITHER)
    flipped = flip_bits(good, 11, 16, keep_head=8)
    yield Case("png-bit-flipped-16x", flipped, EITHER)


def jpeg_sof(width: int, height: int) -> bytes:
    """A baseline JPEG header declaring width x height, one grey component, then EOI."""
    quant = b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + bytes([1] * 64)
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    huff_dc = b"\xff\xc4" + struct.pack(">H", 20) + b"\x00" + bytes([1] + [0] * 15) + b"\x00"
    huff_ac = b"\xff\xc4" + struct.pack(">H", 20) + b"\x10" + bytes([1] + [0] * 15) + b"\x00"
    sos = b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00\x00\x3f\x00"
    return b"\xff\xd8" + quant + sof + huff_dc + huff_ac + sos + b"\x00" * 4096 + b"\xff\xd9"


def exif_loop_jpeg() -> bytes:
    """An EXIF block whose IFD points back at itself, with an absurd Orientation."""
    entry = struct.pack(">HHII", 0x0112, 3, 1, 0x00990000)  # Orientation = 153
    ifd = struct.pack(">H", 1) + entry + struct.pack(">I", 8)  # next IFD: this one again
    tiff = b"MM\x00\x2a" + struct.pack(">I", 8) + ifd
    app1 = b"Exif\0\0" + tiff
    base = picture("JPEG")
    return base[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + base[2:]


def jpeg_cases() -> Iterator[Case]:
    good = picture("JPEG", quality=85)
    yield Case("jpeg-bomb-65500-square", jpeg_sof(65_500, 65_500), REFUSED)
    yield Case("jpeg-bomb-65500-by-1", jpeg_sof(65_500, 1), EITHER)
    yield Case("jpeg-zero-height", jpeg_sof(640, 0), REFUSED)
    yield Case("jpeg-soi-only", b"\xff\xd8\xff\xe0", REFUSED)
    yield Case("jpeg-truncated-after-the-header", good[: good.index(b"\xff\xda") + 12], REFUSED)
    yield Case("jpeg-truncated-at-half", good[: len(good) // 2], REFUSED)
    scan = good.index(b"\xff\xda")
    yield Case("jpeg-scan-bit-flipped", good[:scan + 40] + flip_bits(good[scan + 40 : -2], 12, 24,
                                                                     keep_head=0) + good[-2:],
               EITHER)
    yield Case("jpeg-exif-ifd-loops-to-itself", exif_loop_jpeg(), EITHER)
    progressive = picture("JPEG", (640, 480), progressive=True, quality=90)
    yield Case("jpeg-progressive-truncated", progressive[: len(progressive) * 2 // 3], EITHER)


# --- polyglots and impostors --------------------------------------------------------------------


def polyglot_cases() -> Iterator[Case]:
    pdf, png, jpeg = good_pdf(1), picture("PNG"), picture("JPEG")
    # A PDF header (and a whole PDF) inside a PNG text chunk: it is a PNG, and only that.
    head, rest = png[:33], png[33:]
    inside = head + _chunk(b"tEXt", b"pdf\0" + pdf) + rest
    yield Case("polyglot-png-carrying-a-pdf-in-a-chunk", inside, PDF_OK)
    yield Case("polyglot-png-with-a-pdf-after-iend", png + pdf, EITHER)
    yield Case("polyglot-jpeg-with-a-pdf-appended", jpeg + pdf, EITHER)
    yield Case("polyglot-pdf-with-a-png-appended", pdf + png, PDF_OK)
    yield Case("polyglot-pdf-header-then-png-bytes", b"%PDF-1.4\n" + png, REFUSED)
    yield Case("polyglot-pdf-header-then-jpeg-bytes", b"%PDF-1.4\n" + jpeg, REFUSED)
    yield Case("polyglot-png-signature-then-pdf", PNG_SIGNATURE + pdf, REFUSED)
    yield Case("polyglot-jpeg-soi-then-pdf", b"\xff\xd8\xff\xe0" + pdf, REFUSED)
    # PDF readers find a header anywhere in the first kilobyte; vaultd must not.
    yield Case("pdf-header-after-1000-junk-bytes", b"\0" * 1000 + pdf, UNSUPPORTED)
    yield Case("html-with-script", b"<html><script>alert(1)</script>%PDF-1.7</html>", UNSUPPORTED)
    yield Case("svg-with-script", b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
               UNSUPPORTED)
    yield Case("gif", picture("GIF"), UNSUPPORTED)
    yield Case("bmp", picture("BMP"), UNSUPPORTED)
    yield Case("webp", picture("WEBP"), UNSUPPORTED)
    yield Case("tiff", picture("TIFF"), UNSUPPORTED)
    yield Case("zip-local-header", b"PK\x03\x04" + b"\0" * 200, UNSUPPORTED)
    yield Case("pdf-magic-too-short", b"%PDF", UNSUPPORTED)
    yield Case("pdf-magic-lowercase", b"%pdf-1.7\n" + pdf[9:], UNSUPPORTED)
    yield Case("utf16-bom-then-pdf", b"\xff\xfe" + pdf, UNSUPPORTED)

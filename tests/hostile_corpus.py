"""Hostile and broken uploads, generated in memory and deterministic (fixed seeds, no files).

`corpus()` returns `Case(name, data, expect)` tuples: `expect` is the set of upload statuses
that are acceptable for that input. 201 appears only where a careful reader could open the file
(qpdf and PDFium repair a lot); 415 where the first bytes are none of PDF/JPEG/PNG; 422 where the
type is recognised but the file is unreadable, dangerous to decode, or needs a password. A 500,
a 503 or a hang is never acceptable at upload: the file is the problem, not the server.

Every input is small (the largest, 3000 pages, is about 200 kB), so the corpus uploads quickly;
what makes an input hostile is what it declares, not its size.
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import pikepdf
from PIL import Image, ImageDraw

PDF_OK = frozenset({201})
REFUSED = frozenset({422})
UNSUPPORTED = frozenset({415})
EITHER = frozenset({201, 422})  # a repairable file may be accepted; it must never be a 500


class Case(NamedTuple):
    name: str
    data: bytes
    expect: frozenset[int]


# --- raw PDF assembly ---------------------------------------------------------------------------
# Hand-assembled so the defects are exactly the ones named (pikepdf would repair them on save).


def raw_pdf(objects: list[bytes], *, root: int = 1, trailer_extra: bytes = b"",
            xref_shift: int = 0, xref: bool = True, startxref: int | None = None,
            version: bytes = b"1.7") -> bytes:
    """`objects[i]` is the body of object i+1; a classic xref table unless told otherwise."""
    out = bytearray(b"%PDF-" + version + b"\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    table_at = len(out)
    if xref:
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
        for offset in offsets:
            out += b"%010d 00000 n \n" % (offset + xref_shift)
    out += b"trailer\n<< /Size %d /Root %d 0 R " % (len(objects) + 1, root) + trailer_extra
    out += b">>\n"
    if xref or startxref is not None:
        out += b"startxref\n%d\n" % (table_at if startxref is None else startxref)
    out += b"%%EOF\n"
    return bytes(out)


CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _page(content_ref: int, extra: bytes = b"", media: bytes = b"[0 0 612 792]",
          resources: bytes = b"<< /Font << /F1 4 0 R >> >>") -> bytes:
    return (b"<< /Type /Page /Parent 2 0 R /MediaBox " + media + b" /Resources " + resources
            + b" /Contents %d 0 R " % content_ref + extra + b">>")


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d " % len(data) + extra + b">>\nstream\n" + data + b"\nendstream"


def _flate(data: bytes, extra: bytes = b"", packed: bytes | None = None) -> bytes:
    packed = zlib.compress(data, 9) if packed is None else packed
    return _stream(packed, b"/Filter /FlateDecode " + extra)


def zlib_repeat(block: bytes, count: int, tail: bytes = b"") -> bytes:
    """zlib data of `block * count + tail`, compressing `block` only twice: a full flush resets
    the compressor, so every block after the first compresses to the same bytes. (zlib on
    400 MB takes ~10 s on a small machine; this takes milliseconds.)"""
    compressor = zlib.compressobj(9)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH) if count > 1 else b""
    end = compressor.compress(tail) + compressor.flush()  # ends with the Adler-32 it saw
    checksum = 1
    for _ in range(count):
        checksum = zlib.adler32(block, checksum)
    checksum = zlib.adler32(tail, checksum)
    return first + again * (count - 1) + end[:-4] + struct.pack(">I", checksum)


def zlib_zeros(size: int, value: int = 0) -> bytes:
    """zlib data of `size` bytes all equal to `value`."""
    count, rest = divmod(size, 1 << 20)
    if count == 0:
        return zlib.compress(bytes([value]) * size, 9)
    return zlib_repeat(bytes([value]) * (1 << 20), count, bytes([value]) * rest)


HELLO = b"BT /F1 48 Tf 72 600 Td (Hostile but harmless) Tj ET"


def one_page(content: bytes = HELLO, page_extra: bytes = b"", media: bytes = b"[0 0 612 792]",
             catalog: bytes = CATALOG, more: list[bytes] | None = None,
             resources: bytes = b"<< /Font << /F1 4 0 R >> >>", contents: bytes | None = None,
             **kw: object) -> bytes:
    """Catalog 1, Pages 2, Page 3, Font 4, Contents 5, then `more` from object 6 on."""
    objects = [catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               _page(5, page_extra, media, resources), FONT,
               _stream(content) if contents is None else contents, *(more or [])]
    return raw_pdf(objects, **kw)  # type: ignore[arg-type]


def good_pdf(pages: int = 3) -> bytes:
    pdf = pikepdf.new()
    font = pdf.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica))
    for number in range(1, pages + 1):
        pdf.pages.append(pikepdf.Page(pikepdf.Dictionary(
            Type=pikepdf.Name.Page, MediaBox=[0, 0, 612, 792],
            Resources=pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font)),
            Contents=pdf.make_stream(f"BT /F1 40 Tf 72 600 Td (Page {number}) Tj ET".encode()),
        )))
    return _save(pdf)


def _save(pdf: pikepdf.Pdf, **options: object) -> bytes:
    out = io.BytesIO()
    pdf.save(out, static_id=True, **options)  # type: ignore[arg-type]
    return out.getvalue()


# --- PDFs: truncation and bit rot ---------------------------------------------------------------


def pdf_truncations() -> Iterator[Case]:
    data = good_pdf(3)
    yield Case("pdf-header-only", b"%PDF-1.7\n", REFUSED)
    yield Case("pdf-truncated-to-a-third", data[: len(data) // 3], EITHER)
    yield Case("pdf-truncated-before-the-trailer", data[: data.rindex(b"trailer")], EITHER)
    yield Case("pdf-truncated-mid-stream", data[: data.index(b"stream") + 20], EITHER)


def flip_bits(data: bytes, seed: int, flips: int, keep_head: int = 8) -> bytes:
    """`flips` random single-bit errors after the first `keep_head` bytes (the type survives)."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(flips):
        at = rng.randrange(keep_head, len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def pdf_bit_flips() -> Iterator[Case]:
    plain = good_pdf(3)
    packed = _save(pikepdf.open(io.BytesIO(plain)),
                   object_stream_mode=pikepdf.ObjectStreamMode.generate)
    for seed, flips in [(1, 1), (2, 8), (3, 64), (4, 512)]:
        yield Case(f"pdf-bit-flipped-{flips}x", flip_bits(plain, seed, flips), EITHER)
    for seed, flips in [(5, 4), (6, 64)]:
        yield Case(f"pdf-object-streams-bit-flipped-{flips}x", flip_bits(packed, seed, flips),
                   EITHER)


# --- PDFs: xref, cycles, nesting ----------------------------------------------------------------


def pdf_structure() -> Iterator[Case]:
    yield Case("pdf-xref-offsets-all-wrong", one_page(xref_shift=37), EITHER)
    yield Case("pdf-xref-missing", one_page(xref=False), EITHER)
    yield Case("pdf-startxref-beyond-eof", one_page(startxref=10**9), EITHER)
    yield Case("pdf-startxref-negative", one_page(startxref=-5), EITHER)
    # The trailer's /Prev points back at this same xref section: an endless chain of updates.
    looped = one_page()
    at = looped.rindex(b"startxref\n") + len(b"startxref\n")
    xref_at = int(looped[at:].split(b"\n", 1)[0])
    yield Case("pdf-xref-prev-loops-to-itself",
               one_page(trailer_extra=b"/Prev %d " % xref_at), EITHER)
    yield Case("pdf-no-pages", raw_pdf([CATALOG, b"<< /Type /Pages /Kids [] /Count 0 >>"]),
               REFUSED)
    yield Case("pdf-root-is-not-a-catalog", one_page(catalog=b"(just a string)"), EITHER)


def pdf_cycles() -> Iterator[Case]:
    # The page tree contains itself (and lies about its count).
    yield Case("pdf-pages-tree-contains-itself", raw_pdf([
        CATALOG, b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>", _page(5), FONT,
        _stream(HELLO)]), EITHER)
    # Two intermediate nodes that are each other's only kid: no leaf is reachable.
    yield Case("pdf-pages-nodes-point-at-each-other", raw_pdf([
        CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Pages /Parent 2 0 R /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Pages /Parent 3 0 R /Kids [3 0 R] /Count 1 >>"]), EITHER)
    # An object that is a reference to itself, used as the page's /Resources.
    yield Case("pdf-object-refers-to-itself", one_page(resources=b"6 0 R", more=[b"6 0 R"]),
               EITHER)
    # A form XObject that draws itself: rendering recurses forever unless the renderer stops it.
    form = _stream(b"q 0.5 0 0 0.5 10 10 cm /X0 Do Q 0 0 m 100 100 l S",
                   b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                   b"/Resources << /XObject << /X0 6 0 R >> >> ")
    yield Case("pdf-form-xobject-draws-itself", one_page(
        content=b"/X0 Do " + HELLO, more=[form],
        resources=b"<< /Font << /F1 4 0 R >> /XObject << /X0 6 0 R >> >>"), EITHER)
    # Two dictionaries inheriting from each other through /Parent (attribute lookup loops).
    yield Case("pdf-parent-chain-loops", raw_pdf([
        CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 /Parent 3 0 R >>",
        b"<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>", FONT, _stream(HELLO)]), EITHER)


def pdf_nesting() -> Iterator[Case]:
    depth = 100_000
    arrays = b"[" * depth + b"]" * depth
    yield Case("pdf-arrays-nested-100000-deep", one_page(page_extra=b"/Junk " + arrays + b" "),
               EITHER)
    dicts = b"<</A " * depth + b"1" + b">>" * depth
    yield Case("pdf-dicts-nested-100000-deep", one_page(page_extra=b"/Junk " + dicts + b" "),
               EITHER)
    unclosed = b"[" * depth
    yield Case("pdf-arrays-never-closed", one_page(page_extra=b"/Junk " + unclosed), EITHER)
    yield Case("pdf-content-operators-nested-deep", one_page(
        content=b"q " * 50_000 + HELLO + b" Q" * 50_000), EITHER)


# --- PDFs: geometry and size --------------------------------------------------------------------


def pdf_geometry() -> Iterator[Case]:
    yield Case("pdf-mediabox-14400-square", one_page(media=b"[0 0 14400 14400]"), PDF_OK)
    yield Case("pdf-mediabox-a-billion-points", one_page(media=b"[0 0 1000000000 1000000000]"),
               EITHER)
    yield Case("pdf-mediabox-1e30", one_page(media=b"[0 0 1e30 1e30]"), EITHER)
    yield Case("pdf-mediabox-100000-by-1", one_page(media=b"[0 0 100000 1]"), EITHER)
    yield Case("pdf-mediabox-zero", one_page(media=b"[0 0 0 0]"), EITHER)
    yield Case("pdf-mediabox-inverted", one_page(media=b"[612 792 0 0]"), EITHER)
    yield Case("pdf-mediabox-not-numbers", one_page(media=b"[/a (b) null true]"), EITHER)
    yield Case("pdf-userunit-75", one_page(media=b"[0 0 14400 14400]",
                                           page_extra=b"/UserUnit 75000 "), EITHER)


def many_pages_pdf(pages: int = 3000) -> bytes:
    """`pages` tiny pages sharing one font and one content stream (~65 bytes a page)."""
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [CATALOG, b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages, FONT,
               _stream(b"BT /F1 12 Tf 10 10 Td (p) Tj ET")]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] " \
           b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    return raw_pdf(objects + [page] * pages)


def pdf_size() -> Iterator[Case]:
    yield Case("pdf-3000-pages", many_pages_pdf(3000), PDF_OK)
    yield Case("pdf-count-claims-a-million-pages", raw_pdf([
        CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1000000 >>", _page(5), FONT,
        _stream(HELLO)]), EITHER)
    # A content stream of 64 MB of spaces in 64 kB: the parser must read through all of it.
    spaces = _flate(b"", packed=zlib_zeros(64 << 20, ord(" ")))
    yield Case("pdf-content-stream-flate-bomb", one_page(
        page_extra=b"/Contents [6 0 R 5 0 R] ", more=[spaces]), EITHER)
    # An image XObject declaring 60000 x 60000 RGB (10.8 GB decoded) from a tiny flate stream.
    image = _flate(b"\0" * (1 << 20), b"/Type /XObject /Subtype /Image /Width 60000 "
                   b"/Height 60000 /ColorSpace /DeviceRGB /BitsPerComponent 8 ")
    yield Case("pdf-image-xobject-declares-10-gigabytes", one_page(
        content=b"q 612 0 0 792 0 0 cm /Im0 Do Q", more=[image],
        resources=b"<< /Font << /F1 4 0 R >> /XObject << /Im0 6 0 R >> >>"), EITHER)
    body = b"\nstream\n" + HELLO + b"\nendstream"
    yield Case("pdf-stream-length-negative", one_page(contents=b"<< /Length -1 >>" + body),
               EITHER)
    yield Case("pdf-stream-length-huge", one_page(contents=b"<< /Length 99999999999 >>" + body),
               EITHER)
    yield Case("pdf-stream-length-is-a-loop", one_page(contents=b"<< /Length 6 0 R >>" + body,
                                                       more=[b"6 0 R"]), EITHER)
    yield Case("pdf-object-number-2147483647", one_page(
        resources=b"2147483647 0 R", more=[b"(filler)"]).replace(b"6 0 obj", b"2147483647 0 obj"),
        EITHER)


# --- PDFs: encryption, scripts, attachments -----------------------------------------------------


def pdf_slow() -> Iterator[Case]:
    """Small files whose first page takes longer than a render may: validation cannot finish."""
    strokes = zlib_repeat(b"0 0 m 500 700 l S\n" * 50_000, 40)  # 2 M path segments in 90 kB
    yield Case("pdf-two-million-path-segments", one_page(contents=_flate(b"", packed=strokes)),
               EITHER)


def pdf_features() -> Iterator[Case]:
    # RC4 rather than AES: qpdf draws AES initialisation vectors at random, and the corpus must
    # be the same bytes on every run. PDFium's password check is the same for both.
    for name, encryption in [
        ("pdf-user-password", pikepdf.Encryption(user="hunter2", owner="owner", R=4, aes=False,
                                                 metadata=False)),
        ("pdf-user-password-r3", pikepdf.Encryption(user="x", owner="y", R=3, aes=False,
                                                    metadata=False)),
    ]:
        yield Case(name, _save(pikepdf.open(io.BytesIO(good_pdf(2))), encryption=encryption),
                   REFUSED)
    owner_only = pikepdf.Encryption(user="", owner="owner", R=4, aes=False, metadata=False,
                                    allow=pikepdf.Permissions(extract=False, print_highres=False))
    yield Case("pdf-owner-password-only",
               _save(pikepdf.open(io.BytesIO(good_pdf(2))), encryption=owner_only), PDF_OK)
    yield Case("pdf-javascript-everywhere", javascript_pdf(), PDF_OK)
    yield Case("pdf-embedded-files", embedded_files_pdf(), PDF_OK)
    yield Case("pdf-launch-and-uri-actions", one_page(catalog=(
        b"<< /Type /Catalog /Pages 2 0 R /OpenAction << /S /Launch /F (calc.exe) "
        b"/Win << /F (cmd.exe) /P (/c calc) >> >> /URI << /Base (http://attacker.test/) >> >>")),
        PDF_OK)


def javascript_pdf() -> bytes:
    """JavaScript in the open action, the page's additional actions, an annotation and a form."""
    pdf = pikepdf.open(io.BytesIO(good_pdf(2)))
    script = pikepdf.Dictionary(S=pikepdf.Name.JavaScript,
                                JS=pikepdf.String("app.alert('pwned'); while(true){}"))
    pdf.Root.OpenAction = pdf.make_indirect(script)
    pdf.Root.Names = pikepdf.Dictionary(JavaScript=pikepdf.Dictionary(
        Names=pikepdf.Array([pikepdf.String("boot"), pdf.make_indirect(script)])))
    page = pdf.pages[0]
    page.obj.AA = pikepdf.Dictionary(O=script)
    widget = pdf.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Annot, Subtype=pikepdf.Name.Widget, FT=pikepdf.Name.Tx,
        T=pikepdf.String("field"), Rect=[72, 72, 300, 100], P=page.obj,
        AA=pikepdf.Dictionary(K=script, F=script, C=script),
    ))
    link = pdf.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Annot, Subtype=pikepdf.Name.Link, Rect=[72, 120, 300, 150], A=script))
    page.obj.Annots = pikepdf.Array([widget, link])
    pdf.Root.AcroForm = pikepdf.Dictionary(Fields=pikepdf.Array([widget]), NeedAppearances=True)
    return _save(pdf)


def embedded_files_pdf() -> bytes:
    pdf = pikepdf.open(io.BytesIO(good_pdf(1)))
    payloads = {"payload.exe": b"MZ" + b"\x90" * 500, "inner.pdf": good_pdf(1)}
    for name, data in payloads.items():
        pdf.attachments[name] = pikepdf.AttachedFileSpec(
            pdf, data, description=name, filename=name, mime_type="application/octet-stream",
            creation_date="D:20260101000000Z", mod_date="D:20260101000000Z")
    return _save(pdf)


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


GENERATORS: list[Callable[[], Iterator[Case]]] = [
    pdf_truncations, pdf_bit_flips, pdf_structure, pdf_cycles, pdf_nesting, pdf_geometry,
    pdf_size, pdf_slow, pdf_features, png_cases, jpeg_cases, polyglot_cases,
]


def corpus() -> list[Case]:
    cases = [case for generate in GENERATORS for case in generate()]
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "corpus names must be unique"
    return cases

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


PDF_GENERATORS: list[Callable[[], Iterator[Case]]] = [
    pdf_truncations, pdf_bit_flips, pdf_structure, pdf_cycles, pdf_nesting, pdf_geometry,
    pdf_size, pdf_slow, pdf_features,
]


def corpus() -> list[Case]:
    # Imported here: the image cases build on this module's Case and PDF helpers.
    from tests.hostile_images import jpeg_cases, png_cases, polyglot_cases
    from tests.hostile_office import office_cases

    generators = [*PDF_GENERATORS, png_cases, jpeg_cases, polyglot_cases, office_cases]
    cases = [case for generate in generators for case in generate()]
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "corpus names must be unique"
    return cases

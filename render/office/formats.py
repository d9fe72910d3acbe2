"""Which Office format a ZIP upload is, decided in a render worker from the archive's own index.

The server only sees the first bytes (a ZIP's local header, or the legacy OLE2 signature). The
worker reads the ZIP central directory through the broker (zipfile: seeks, never extracts the
whole archive), checks the archive's declared sizes against a bomb's, and reads one small entry:
`[Content_Types].xml` (OOXML) or `mimetype` (OpenDocument). Every XML part is then scanned,
decompressed in bounded pieces and read in its own encoding (UTF-8 or UTF-16; any other is
refused), for a DTD: neither family ever declares one, and a DTD is how billion-laughs entity
expansion and external entities get in; a spreadsheet's sheets are measured on the way
(`sheet_cost`: a used range over the cell budget is refused).
"""

from __future__ import annotations

import encodings.cp437  # noqa: F401 - zipfile decodes names with it, after confinement
import re
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, BinaryIO, cast

from render.documents.brokered_reads import open_blob
from render.office.office_types import DOCX, ODP, ODS, ODT, PPTX, XLSX
from render.office.sheet_cost import Budget, SheetMeter, meter_for
from render.office.xml_encoding import as_utf8
from render.wire.model import DocumentSource, Unreadable

# The main part's content type in [Content_Types].xml names the OOXML document kind.
_OOXML_MAIN = {
    DOCX: b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    XLSX: b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
    PPTX: b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
}

MAX_ENTRIES = 10_000
MAX_EXPANDED = 512 << 20  # all entries together, as declared
MAX_RATIO = 500  # an entry of over 1 MiB expanding more than this is a bomb (XML: ~10-50)
_SMALL_ENTRY = 1 << 20
_MAX_INDEX_ENTRY = 256 << 10  # [Content_Types].xml or mimetype
_DTD_MARKERS = (b"<!DOCTYPE", b"<!ENTITY")
_SCAN_PIECE = 256 << 10
MAX_DEPTH = 1000  # element nesting; Word's deepest real documents stay far below
_TAG_TOKEN = re.compile(rb"<[A-Za-z_]|</|/>")

ARCHIVE_DAMAGED = "the Office document is damaged (its ZIP archive cannot be read)"
TOO_LARGE = "the Office document expands too much (a ZIP bomb?)"
TOO_DEEP = f"the Office document nests XML elements deeper than {MAX_DEPTH} levels"
HAS_DTD = "the Office document declares XML entities (a DTD), which Office formats never do"


def identify_office(source: DocumentSource) -> str:
    """The Office content type of a ZIP upload, "" if it is a ZIP of something else or has no
    readable index; Unreadable if its entries are damaged, a bomb, or declare a DTD."""
    with open_blob(source) as blob:
        stream = blob.stream()
        try:
            try:
                archive = zipfile.ZipFile(cast(BinaryIO, stream))
            except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError):
                stream.raise_pending()
                return ""  # no readable index (a truncated archive): nothing we can call ours
            with archive:
                return _identify(archive)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError,
                KeyError, OSError):
            stream.raise_pending()
            raise Unreadable(ARCHIVE_DAMAGED) from None
        finally:
            stream.close()


def _identify(archive: zipfile.ZipFile) -> str:
    entries = archive.infolist()
    check_sizes(entries)
    names = {entry.filename: entry for entry in entries}
    kind = ""
    if "[Content_Types].xml" in names:
        kind = _ooxml_kind(_small_entry(archive, names["[Content_Types].xml"]))
    elif "mimetype" in names:
        kind = _odf_kind(_small_entry(archive, names["mimetype"]))
    if kind:
        scan_parts(archive, entries)
    return kind


def check_sizes(entries: list[zipfile.ZipInfo]) -> None:
    if len(entries) > MAX_ENTRIES or sum(e.file_size for e in entries) > MAX_EXPANDED:
        raise Unreadable(TOO_LARGE)
    for entry in entries:
        if entry.file_size > _SMALL_ENTRY and entry.file_size > MAX_RATIO * max(
                entry.compress_size, 1):
            raise Unreadable(TOO_LARGE)


def _small_entry(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> bytes:
    with archive.open(entry) as member:
        data = member.read(_MAX_INDEX_ENTRY + 1)
    if len(data) > _MAX_INDEX_ENTRY:
        raise Unreadable(TOO_LARGE)
    return data


def _ooxml_kind(types: bytes) -> str:
    found = [kind for kind, main in _OOXML_MAIN.items() if main in types]
    return found[0] if len(found) == 1 else ""


def _odf_kind(mimetype: bytes) -> str:
    text = mimetype.strip().decode("ascii", "replace")
    return text if text in (ODT, ODS, ODP) else ""


def scan_parts(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo]) -> None:
    budget = Budget()  # a spreadsheet's used range, all its sheets together
    for entry in entries:
        if entry.filename.endswith((".xml", ".rels")):
            _scan_part(archive, entry, meter_for(entry.filename, budget))


def _scan_part(archive: zipfile.ZipFile, entry: zipfile.ZipInfo,
               meter: SheetMeter | None = None) -> None:
    """No DTD, and no element nested deeper than MAX_DEPTH, read in the part's own encoding
    (`xml_encoding.as_utf8`: UTF-16 decoded, others refused). In well-formed XML a raw '<' is
    only ever markup, so counting '<name', '</' and '/>' follows the depth (comments, CDATA and
    processing instructions aside, which Office parts hardly use and which only lower it)."""
    depth, tail = 0, b""
    with archive.open(entry) as member:
        for piece in as_utf8(_pieces(member, entry)):
            window = tail + piece
            if any(marker in window for marker in _DTD_MARKERS):
                raise Unreadable(HAS_DTD)
            # Tokens are two bytes: one split between pieces starts at the tail's last byte.
            for token in _TAG_TOKEN.finditer(window, max(len(tail) - 1, 0)):
                depth += 1 if token.group(0)[1:] not in (b"/", b">") else -1
                if depth > MAX_DEPTH:
                    raise Unreadable(TOO_DEEP)
            tail = window[-16:]
            if meter is not None:
                meter.feed(piece)
    if meter is not None:
        meter.finish()


def _pieces(member: IO[bytes], entry: zipfile.ZipInfo) -> Iterator[bytes]:
    """The part decompressed in bounded pieces, no more of it than its index entry declared."""
    expanded = 0
    while piece := member.read(_SCAN_PIECE):
        expanded += len(piece)
        if expanded > max(entry.file_size, 0) + _SCAN_PIECE:
            raise Unreadable(TOO_LARGE)  # more than the index declared: a lie
        yield piece

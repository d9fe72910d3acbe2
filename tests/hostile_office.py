"""Hostile Office uploads for the corpus (tests/hostile_corpus.py): refused by the worker's
check of the ZIP index before LibreOffice sees them (422), or not an Office document at all
(415). Built in memory; the bomb expands to 64 MiB but is about 64 kB on the wire, and the
largest (10,001 empty entries) is about 1.2 MB."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

from tests import office_documents as od
from tests.hostile_corpus import UNSUPPORTED, Case

# Without LibreOffice, Office uploads are off and every ZIP is the spec's 415.
REFUSED = frozenset({422}) if shutil.which("soffice") else UNSUPPORTED


def _damaged_entry() -> bytes:
    data = bytearray(od.docx(["damaged " * 200]))
    start = data.index(b"word/document.xml") + len(b"word/document.xml")
    for i in range(start + 10, start + 40):  # inside the entry's deflate stream
        data[i] ^= 0x5A
    return bytes(data)


def office_cases() -> Iterator[Case]:
    laughs = ('<!DOCTYPE w:document [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
              '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;">]>')
    yield Case("office-billion-laughs", od.docx(["&d;"], prolog=laughs), REFUSED)
    external = '<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    yield Case("office-external-entity", od.docx(["&x;"], prolog=external), REFUSED)
    yield Case("office-zip-bomb", od.docx(["bomb"], body_extra=" " * (64 << 20)), REFUSED)
    yield Case("office-many-entries", od.zip_of(
        [*_parts(od.docx(["many"])), *((f"word/media/e{i}.xml", "") for i in range(10_001))]),
        REFUSED)
    depth = 1_000
    yield Case("office-deep-nesting", od.docx(["deep"], body_extra="<w:sdt><w:sdtContent>" * depth
                                              + "</w:sdtContent></w:sdt>" * depth), REFUSED)
    yield Case("office-damaged-entry", _damaged_entry(), REFUSED)
    # 100,000 pages to lay out: killed at the corpus server's short deadline (the stand-in for
    # a document that hangs LibreOffice; see office_documents.docx_that_hangs)
    yield Case("office-hangs-libreoffice", od.docx_that_hangs(), REFUSED)
    yield Case("office-truncated", od.docx(["cut"])[:-40], UNSUPPORTED)
    yield Case("office-spreadsheet-truncated", od.xlsx([[["cut"]]])[:200], UNSUPPORTED)
    yield Case("office-renamed-zip", od.zip_of([("readme.txt", "not a document")]), UNSUPPORTED)
    yield Case("office-legacy-doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4088),
               UNSUPPORTED)


def _parts(package: bytes) -> list[tuple[str, str | bytes]]:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        return [(name, archive.read(name)) for name in archive.namelist()]

"""DOCX packages whose `word/document.xml` is in another encoding than the UTF-8 Office
writes: the same XML, its declaration naming the encoding, with or without a byte-order mark,
for the tests of the worker's DTD and nesting checks (render.office.xml_encoding)."""

from __future__ import annotations

import io
import zipfile

from tests import office_documents as od

BOMS = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff", "utf-32-le": b"\xff\xfe\x00\x00",
        "utf-32-be": b"\x00\x00\xfe\xff", "utf-8": b"\xef\xbb\xbf"}
LAUGHS = ('<!DOCTYPE w:document [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
          '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>')
DEPTH = 60_000


def nested(depth: int = DEPTH) -> str:
    return "<w:sdt><w:sdtContent>" * (depth // 2) + "</w:sdtContent></w:sdt>" * (depth // 2)


def encoded_docx(encoding: str, bom: bool = True, declared: str | None = None,
                 **docx_args: str) -> bytes:
    """A DOCX of one page whose document part is in `encoding` (a Python codec name),
    declared as `declared` (the codec's XML name by default)."""
    name = declared or encoding.upper().removesuffix("-LE").removesuffix("-BE")
    package = od.docx(["encoded"], **docx_args)
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        parts = [(part, archive.read(part)) for part in archive.namelist()]
    out: list[tuple[str, str | bytes]] = []
    for part, data in parts:
        if part == "word/document.xml":
            text = data.decode("utf-8").replace('encoding="UTF-8"', f'encoding="{name}"', 1)
            out.append((part, (BOMS[encoding] if bom else b"") + text.encode(encoding)))
        else:
            out.append((part, data))
    return od.zip_of(out)


def parts_of(package: bytes) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(package))

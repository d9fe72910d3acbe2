"""One real conversion of a tiny document, for `vault-admin doctor`: is the converter installed,
does it convert, and which sandbox layers did it report."""

from __future__ import annotations

import io
import zipfile

from render.office import runner

_TYPES = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
          'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.'
          'openxmlformats-package.relationships+xml"/><Override PartName="/word/document.xml" '
          'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.'
          'main+xml"/></Types>')
_RELS = ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
         'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://'
         'schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
         'Target="word/document.xml"/></Relationships>')
_DOCUMENT = ('<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.'
             'openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>vaultd '
             "doctor</w:t></w:r></w:p></w:body></w:document>")


def tiny_docx() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", _DOCUMENT)
    return out.getvalue()


async def probe(timeout: float, memory_limit: int) -> tuple[bool, bool, int]:
    """(installed, converted, layers mask)."""
    if not runner.installed():
        return (False, False, 0)
    data = tiny_docx()

    async def read(offset: int, length: int) -> bytes:
        return data[offset:offset + length]

    job = runner.Job(len(data), "docx", timeout, memory_limit, 16 << 20)
    try:
        pdf, layers = await runner.convert(job, read)
    except runner.ConversionFailed:
        return (True, False, 0)
    return (True, pdf.startswith(b"%PDF-"), layers)

"""Office documents built by hand for tests: the smallest OOXML and OpenDocument packages
LibreOffice opens, with known text on each page, sheet or slide (no binary fixtures)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from xml.sax.saxutils import escape

_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_OOXML_TYPES = "application/vnd.openxmlformats-officedocument"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def zip_of(parts: Sequence[tuple[str, str | bytes]], stored_first: bool = False) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, (name, data) in enumerate(parts):
            kind = zipfile.ZIP_STORED if stored_first and index == 0 else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=kind)
    return out.getvalue()


def _types(overrides: dict[str, str]) -> str:
    items = "".join(f'<Override PartName="{part}" ContentType="{kind}"/>'
                    for part, kind in overrides.items())
    return (f'{_XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f"{items}</Types>")


def _rels(targets: Sequence[tuple[str, str]], extra: str = "") -> str:
    items = "".join(f'<Relationship Id="rId{i + 1}" Type="{_REL}/{kind}" Target="{target}"/>'
                    for i, (kind, target) in enumerate(targets))
    return f'{_XML}<Relationships xmlns="{_PKG_REL}">{items}{extra}</Relationships>'


def docx(pages: Sequence[str], body_extra: str = "", rels_extra: str = "",
         prolog: str = "") -> bytes:
    """One paragraph of text per page, each after a page break."""
    brk = '<w:br w:type="page"/>'
    paras = "".join(f"<w:p><w:r>{brk if i else ''}<w:t>{escape(text)}</w:t></w:r></w:p>"
                    for i, text in enumerate(pages))
    document = (f'{_XML}{prolog}<w:document xmlns:w="{_W}" xmlns:r="{_REL}" '
                f'xmlns:a="{_A}"><w:body>{paras}{body_extra}</w:body></w:document>')
    main = f"{_OOXML_TYPES}.wordprocessingml.document.main+xml"
    return zip_of([("[Content_Types].xml", _types({"/word/document.xml": main})),
                   ("_rels/.rels", _rels([("officeDocument", "word/document.xml")])),
                   ("word/document.xml", document),
                   ("word/_rels/document.xml.rels", _rels([], rels_extra))])


def column_name(index: int) -> str:
    """A spreadsheet's column letters: 0 -> A, 25 -> Z, 26 -> AA."""
    name, number = "", index + 1
    while number:
        number, rest = divmod(number - 1, 26)
        name = chr(65 + rest) + name
    return name


def xlsx(sheets: Sequence[Sequence[Sequence[str]]], defined_names: str = "",
         sheet_extra: str = "") -> bytes:
    """Each sheet a grid of text cells; `defined_names` (print areas) go in the workbook,
    `sheet_extra` (a print setup) after each sheet's data."""
    names = "".join(f'<sheet name="Sheet{i + 1}" sheetId="{i + 1}" r:id="rId{i + 1}"/>'
                    for i in range(len(sheets)))
    workbook = (f'{_XML}<workbook xmlns="{_S}" xmlns:r="{_REL}"><sheets>{names}</sheets>'
                f"{defined_names}</workbook>")
    parts: list[tuple[str, str | bytes]] = []
    overrides = {"/xl/workbook.xml": f"{_OOXML_TYPES}.spreadsheetml.sheet.main+xml"}
    for i, rows in enumerate(sheets):
        cells = "".join(
            f'<row r="{r + 1}">' + "".join(
                f'<c r="{column_name(c)}{r + 1}" t="inlineStr"><is><t>{escape(v)}</t></is></c>'
                for c, v in enumerate(row)) + "</row>" for r, row in enumerate(rows))
        parts.append((f"xl/worksheets/sheet{i + 1}.xml",
                      f'{_XML}<worksheet xmlns="{_S}"><sheetData>{cells}</sheetData>{sheet_extra}'
                      "</worksheet>"))
        overrides[f"/xl/worksheets/sheet{i + 1}.xml"] = (
            f"{_OOXML_TYPES}.spreadsheetml.worksheet+xml")
    sheet_rels = [("worksheet", f"worksheets/sheet{i + 1}.xml") for i in range(len(sheets))]
    return zip_of([("[Content_Types].xml", _types(overrides)),
                   ("_rels/.rels", _rels([("officeDocument", "xl/workbook.xml")])),
                   ("xl/workbook.xml", workbook),
                   ("xl/_rels/workbook.xml.rels", _rels(sheet_rels)), *parts])


def xlsx_that_hangs(cells: int = 400) -> bytes:
    """A sheet of formulas without cached values, each summing two full columns (a million
    rows): LibreOffice computes them on load for minutes."""
    formula = "SUMPRODUCT(ROW(B1:B1048576)*ROW(C1:C1048576))"
    rows = "".join(f'<row r="{r}"><c r="A{r}"><f>{formula}</f></c></row>'
                   for r in range(1, cells + 1))
    sheet = f'{_XML}<worksheet xmlns="{_S}"><sheetData>{rows}</sheetData></worksheet>'
    return _replace_part(xlsx([[["x"]]]), "xl/worksheets/sheet1.xml", sheet)


def docx_that_hangs(pages: int = 100_000) -> bytes:
    """A 20 KB DOCX of 100,000 page breaks: LibreOffice lays out every page before it writes
    one, minutes of work (2,000 pages take 7 s on the 2-core test machine, 20,000 over 40 s).
    No field loop was found that hangs LibreOffice 7.4 (self- and mutually referencing REF
    bookmarks, variable-set cycles, Writer table formula cycles, NUMPAGES on every page and a
    paragraph hidden on the page count all converted in 1-6 s): this stands for one."""
    return docx(["hang"] * pages)


def _replace_part(package: bytes, name: str, data: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        parts: list[tuple[str, str | bytes]] = [
            (n, data if n == name else archive.read(n)) for n in archive.namelist()]
    return zip_of(parts)


def pptx(slides: Sequence[str]) -> bytes:
    """One text box per slide."""
    ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{i + 1}"/>' for i in range(len(slides)))
    presentation = (f'{_XML}<p:presentation xmlns:p="{_P}" xmlns:r="{_REL}" xmlns:a="{_A}">'
                    f'<p:sldIdLst>{ids}</p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/>'
                    '<p:notesSz cx="6858000" cy="9144000"/></p:presentation>')
    overrides = {"/ppt/presentation.xml": f"{_OOXML_TYPES}.presentationml.presentation.main+xml"}
    parts: list[tuple[str, str | bytes]] = []
    for i, text in enumerate(slides):
        shape = ('<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text"/><p:cNvSpPr txBox="1"/><p:nvPr/>'
                 '</p:nvSpPr><p:spPr><a:xfrm><a:off x="914400" y="914400"/>'
                 '<a:ext cx="7315200" cy="1828800"/></a:xfrm><a:prstGeom prst="rect"/></p:spPr>'
                 f'<p:txBody><a:bodyPr/><a:p><a:r><a:rPr sz="4000"/><a:t>{escape(text)}</a:t>'
                 "</a:r></a:p></p:txBody></p:sp>")
        slide = (f'{_XML}<p:sld xmlns:p="{_P}" xmlns:r="{_REL}" xmlns:a="{_A}"><p:cSld><p:spTree>'
                 '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
                 f"<p:grpSpPr/>{shape}</p:spTree></p:cSld></p:sld>")
        parts.append((f"ppt/slides/slide{i + 1}.xml", slide))
        overrides[f"/ppt/slides/slide{i + 1}.xml"] = f"{_OOXML_TYPES}.presentationml.slide+xml"
    slide_rels = [("slide", f"slides/slide{i + 1}.xml") for i in range(len(slides))]
    return zip_of([("[Content_Types].xml", _types(overrides)),
                   ("_rels/.rels", _rels([("officeDocument", "ppt/presentation.xml")])),
                   ("ppt/presentation.xml", presentation),
                   ("ppt/_rels/presentation.xml.rels", _rels(slide_rels)), *parts])


_ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
           'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
           'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
           'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
           'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
           'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
           'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
           'xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.3"')
_ODF = "application/vnd.oasis.opendocument"


def _odf(kind: str, styles: str, body: str) -> bytes:
    content = (f'{_XML}<office:document-content {_ODF_NS}><office:automatic-styles>{styles}'
               f"</office:automatic-styles><office:body>{body}</office:body>"
               "</office:document-content>")
    manifest = (f'{_XML}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:'
                'xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry '
                f'manifest:full-path="/" manifest:media-type="{_ODF}.{kind}"/>'
                '<manifest:file-entry manifest:full-path="content.xml" '
                'manifest:media-type="text/xml"/></manifest:manifest>')
    return zip_of([("mimetype", f"{_ODF}.{kind}"), ("META-INF/manifest.xml", manifest),
                   ("content.xml", content)], stored_first=True)


def odt(pages: Sequence[str]) -> bytes:
    style = ('<style:style style:name="Break" style:family="paragraph">'
             '<style:paragraph-properties fo:break-before="page"/></style:style>')
    brk = ' text:style-name="Break"'
    paras = "".join(f"<text:p{brk if i else ''}>{escape(t)}</text:p>"
                    for i, t in enumerate(pages))
    return _odf("text", style, f"<office:text>{paras}</office:text>")


def ods(sheets: Sequence[Sequence[Sequence[str]]], table_attributes: str = "") -> bytes:
    """Each sheet a grid of text cells; `table_attributes` (a print range) on every sheet."""
    tables = "".join(
        f'<table:table table:name="Sheet{i + 1}"{table_attributes}>' + "".join(
            "<table:table-row>" + "".join(
                f'<table:table-cell office:value-type="string"><text:p>{escape(v)}</text:p>'
                "</table:table-cell>" for v in row) + "</table:table-row>" for row in rows)
        + "</table:table>" for i, rows in enumerate(sheets))
    return _odf("spreadsheet", "", f"<office:spreadsheet>{tables}</office:spreadsheet>")


def odp(slides: Sequence[str]) -> bytes:
    pages = "".join(
        f'<draw:page draw:name="p{i + 1}"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" '
        f'svg:height="5cm"><draw:text-box><text:p>{escape(t)}</text:p></draw:text-box>'
        "</draw:frame></draw:page>" for i, t in enumerate(slides))
    return _odf("presentation", "", f"<office:presentation>{pages}</office:presentation>")

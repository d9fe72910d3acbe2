"""Spreadsheets that are tiny on the wire and huge to lay out: a value in A1 and one in a far
corner (XFD1048576 by default), as XLSX and as ODS; and their cheap twins, for the cell budget's
tests (render.office.sheet_cost)."""

from __future__ import annotations

import io
import zipfile

from tests import office_documents as od

_S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


def replace_part(package: bytes, name: str, data: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        parts: list[tuple[str, str | bytes]] = [
            (part, data if part == name else archive.read(part)) for part in archive.namelist()]
    return od.zip_of(parts)


def far_cell_xlsx(column: str = "XFD", row: int = 1_048_576, dimension: bool = True) -> bytes:
    extent = f'<dimension ref="A1:{column}{row}"/>' if dimension else ""
    sheet = (f'{_XML}<worksheet xmlns="{_S}">{extent}<sheetData>'
             '<row r="1"><c r="A1" t="inlineStr"><is><t>near</t></is></c></row>'
             f'<row r="{row}"><c r="{column}{row}" t="inlineStr"><is><t>far</t></is></c></row>'
             "</sheetData></worksheet>")
    return replace_part(od.xlsx([[["x"]]]), "xl/worksheets/sheet1.xml", sheet)


def far_cell_ods(columns: int = 16_384, rows: int = 1_048_576) -> bytes:
    """A1 and the cell at (rows, columns), the gap in repeated empty rows and cells, as
    LibreOffice writes one."""
    value = '<table:table-cell office:value-type="string"><text:p>{}</text:p></table:table-cell>'
    table = ('<table:table table:name="Sheet1"><table:table-row>' + value.format("near")
             + f'<table:table-cell table:number-columns-repeated="{columns - 1}"/>'
             f'</table:table-row><table:table-row table:number-rows-repeated="{rows - 2}">'
             f'<table:table-cell table:number-columns-repeated="{columns}"/></table:table-row>'
             f'<table:table-row><table:table-cell table:number-columns-repeated="{columns - 1}"/>'
             + value.format("far") + "</table:table-row></table:table>")
    package = od.ods([[["placeholder"]]])
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        content = archive.read("content.xml").decode()
    start = content.index("<table:table ")
    end = content.index("</table:table>") + len("</table:table>")
    return replace_part(package, "content.xml", content[:start] + table + content[end:])


def trailing_empty_ods() -> bytes:
    """A small ODS as LibreOffice saves it: the used cells, then a million repeated empty rows
    of a thousand empty cells (which cost nothing and must not count)."""
    package = od.ods([[["a", "b"], ["c", "d"]]])
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        content = archive.read("content.xml").decode()
    filler = ('<table:table-row table:number-rows-repeated="1048574">'
              '<table:table-cell table:number-columns-repeated="1024"/></table:table-row>')
    return replace_part(package, "content.xml",
                        content.replace("</table:table>", filler + "</table:table>", 1))

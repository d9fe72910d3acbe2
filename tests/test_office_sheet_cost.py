"""The spreadsheet cell budget, in process, on the function the upload's render worker runs
(`render.office.formats.scan_parts`): a tiny XLSX or ODS whose used range spans A1:XFD1048576
is refused naming the range; a lying `<dimension>`, cells without references, and an ODS's
trailing empty rows are measured as LibreOffice would lay them out. Over HTTP:
tests/test_office_fairness.py."""

from __future__ import annotations

import io
import zipfile

import pytest

from render.office.formats import scan_parts
from render.office.sheet_cost import CELL_BUDGET, Budget, SheetMeter
from render.wire.model import Unreadable
from tests import office_documents as od
from tests.office_costly import far_cell_ods, far_cell_xlsx, trailing_empty_ods

FAR = ("the spreadsheet's used range exceeds the budget of 2,000,000 cells ({part} spans "
       "A1:XFD1048576, 17,179,869,184 cells)")


def _scan(package: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        scan_parts(archive, archive.infolist())


def _refusal(package: bytes) -> str:
    with pytest.raises(Unreadable) as refused:
        _scan(package)
    return str(refused.value)


def test_a_far_cell_in_a_tiny_xlsx_is_refused() -> None:
    package = far_cell_xlsx()
    assert len(package) < 2_000
    assert _refusal(package) == FAR.format(part="xl/worksheets/sheet1.xml")
    assert _refusal(far_cell_xlsx(dimension=False)) == FAR.format(
        part="xl/worksheets/sheet1.xml")


def test_a_far_cell_in_a_tiny_ods_is_refused() -> None:
    package = far_cell_ods()
    assert len(package) < 2_000
    assert _refusal(package) == FAR.format(part="content.xml table 1")


def test_the_budget_is_for_the_whole_document() -> None:
    assert CELL_BUDGET == 2_000_000
    _scan(far_cell_xlsx("T", 100_000))  # 20 columns of 100,000 rows: the budget exactly
    assert _refusal(far_cell_xlsx("U", 100_000)) == (
        "the spreadsheet's used range exceeds the budget of 2,000,000 cells "
        "(xl/worksheets/sheet1.xml spans A1:U100000, 2,100,000 cells)")
    two = od.xlsx([[["a"]], [["b"]]])
    budget = Budget()
    for part in ("xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml"):
        meter = SheetMeter(part, budget, xlsx=True)
        meter.feed(b'<worksheet><sheetData><row r="1000"><c r="T1000"/></row></sheetData>')
        meter.finish()
    assert budget.used == 2 * 20_000
    _scan(two)


def test_cells_without_references_and_split_tags_are_measured() -> None:
    budget = Budget(cells=100)
    meter = SheetMeter("xl/worksheets/sheet1.xml", budget, xlsx=True)
    cells = b"".join(b"<c><v>1</v></c>" for _ in range(11))
    xml = b'<worksheet><sheetData><row r="10">' + cells + b"</row></sheetData></worksheet>"
    for start in range(0, len(xml), 7):  # pieces that cut tags anywhere
        meter.feed(xml[start:start + 7])
    with pytest.raises(Unreadable, match=r"spans A1:K10, 110 cells"):
        meter.finish()


def test_trailing_empty_rows_of_an_ods_and_ordinary_sheets_pass() -> None:
    _scan(trailing_empty_ods())
    _scan(od.xlsx([[["a", "b"], ["c", "d"]]]))
    _scan(od.ods([[["a", "b"], ["c", "d"]]]))
    _scan(od.docx(["not a spreadsheet"]))

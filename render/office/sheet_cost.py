"""What a spreadsheet will cost LibreOffice, read before it runs: the used range of its sheets.

A few bytes can name a cell far away (a value in A1 and one in XFD1048576: 1.6 KB), and
LibreOffice then lays out and prints the whole rectangle between them, holding a conversion
slot until its deadline. So while the worker scans the parts (`formats.scan_parts`, already
decompressed and decoded to UTF-8), each sheet's used range is measured from the cells
actually present (an XLSX worksheet's `<c r="...">` and `<row r>`, and its `<dimension>`; an
ODS table's rows and cells with their repeat counts, where only cells with content count) and
the rectangles' areas are added up. A document over CELL_BUDGET cells is refused (422) before
LibreOffice sees it. Tags are found by name in complete pieces, never parsed as a tree.
"""

from __future__ import annotations

import re

from render.wire.model import Unreadable

CELL_BUDGET = 2_000_000  # cells of used range per document: 100,000 rows of 20 columns
MAX_TAG = 1 << 20  # a start tag longer than this is no spreadsheet's
TOO_COSTLY = ("the spreadsheet's used range exceeds the budget of {budget:,} cells ({part} "
              "spans A1:{corner}, {area:,} cells)")
TAG_TOO_LONG = "the Office document has an XML tag longer than 1 MiB"

_TAG = re.compile(rb"<(/?)(?:[A-Za-z_][\w.-]*:)?(row|c|dimension|table|table-row|table-cell"
                  rb"|covered-table-cell)(?=[\s/>])([^>]*)>")
_REF = re.compile(rb"""\sr\s*=\s*["']\$?([A-Za-z]{1,3})\$?([0-9]{1,7})["']""")
_ROW_NUMBER = re.compile(rb"""\sr\s*=\s*["']([0-9]{1,7})["']""")
_DIMENSION = re.compile(rb"""\sref\s*=\s*["'][^"':]*:?\$?([A-Za-z]{1,3})\$?([0-9]{1,7})["']""")
_REPEAT = {b"table-row": re.compile(rb"""number-rows-repeated\s*=\s*["']([0-9]{1,9})["']"""),
           b"table-cell": re.compile(rb"""number-columns-repeated\s*=\s*["']([0-9]{1,9})["']""")}
_VALUE_TYPE = re.compile(rb"""value-type\s*=\s*["']""")


def column_number(letters: bytes) -> int:
    number = 0
    for letter in letters.upper():
        number = number * 26 + letter - 64
    return number


def column_letters(number: int) -> str:
    name = ""
    while number:
        number, rest = divmod(number - 1, 26)
        name = chr(65 + rest) + name
    return name


class Budget:
    """The cells of used range counted so far in one document."""

    def __init__(self, cells: int = CELL_BUDGET) -> None:
        self.cells = cells
        self.used = 0

    def charge(self, part: str, rows: int, columns: int) -> None:
        area = rows * columns
        self.used += area
        if self.used > self.cells:
            raise Unreadable(TOO_COSTLY.format(budget=self.cells, part=part, area=area,
                                               corner=f"{column_letters(columns)}{rows}"))


class SheetMeter:
    """Fed a sheet-bearing part's UTF-8 in pieces; charges the budget with each sheet's used
    range. `xlsx` for a worksheet part, else an ODS `content.xml` (many tables)."""

    def __init__(self, part: str, budget: Budget, xlsx: bool) -> None:
        self.part, self.budget, self.xlsx = part, budget, xlsx
        self.carry = b""
        self.tables = 0
        self._new_sheet()

    def _new_sheet(self) -> None:
        self.row = self.column = self.max_row = self.max_column = 0
        self.row_repeat = 1

    def feed(self, piece: bytes) -> None:
        window = self.carry + piece
        cut = window.rfind(b">") + 1  # only complete tags: a tag split here waits for the rest
        for tag in _TAG.finditer(window, 0, cut):
            self._tag(tag.group(1) == b"/", tag.group(2), tag.group(3))
        self.carry = window[cut:]
        if len(self.carry) > MAX_TAG:
            raise Unreadable(TAG_TOO_LONG)

    def finish(self) -> None:
        if self.xlsx:
            self._charge(self.part)

    def _charge(self, part: str) -> None:
        if self.max_row and self.max_column:
            self.budget.charge(part, self.max_row, self.max_column)

    def _tag(self, closing: bool, name: bytes, attributes: bytes) -> None:
        if self.xlsx:
            self._xlsx_tag(closing, name, attributes)
        else:
            self._ods_tag(closing, name, attributes)

    def _xlsx_tag(self, closing: bool, name: bytes, attributes: bytes) -> None:
        if closing:
            return
        if name == b"row":
            number = _ROW_NUMBER.search(attributes)
            self.row = int(number.group(1)) if number else self.row + 1
            self.column = 0
        elif name == b"c":
            ref = _REF.search(attributes)
            if ref:
                self.column, self.row = column_number(ref.group(1)), int(ref.group(2))
            else:
                self.column += 1
            self._reach(max(self.row, 1), self.column)
        elif name == b"dimension":
            corner = _DIMENSION.search(attributes)
            if corner:
                self._reach(int(corner.group(2)), column_number(corner.group(1)))

    def _ods_tag(self, closing: bool, name: bytes, attributes: bytes) -> None:
        if name == b"table":
            if closing:
                self.tables += 1
                self._charge(f"{self.part} table {self.tables}")
            self._new_sheet()
        elif closing:
            return
        elif name == b"table-row":
            self.row_repeat = _repeat(b"table-row", attributes)
            self.row += self.row_repeat
            self.column = 0
        elif name in (b"table-cell", b"covered-table-cell"):
            columns = _repeat(b"table-cell", attributes)
            has_content = not attributes.endswith(b"/") or _VALUE_TYPE.search(attributes)
            self.column += columns
            if has_content:
                self._reach(self.row, self.column)

    def _reach(self, row: int, column: int) -> None:
        self.max_row, self.max_column = max(self.max_row, row), max(self.max_column, column)


def _repeat(kind: bytes, attributes: bytes) -> int:
    found = _REPEAT[kind].search(attributes)
    return max(int(found.group(1)), 1) if found else 1


def meter_for(part: str, budget: Budget) -> SheetMeter | None:
    """The meter of a part that holds sheets, None for any other part."""
    if part.startswith("xl/worksheets/") and part.endswith(".xml"):
        return SheetMeter(part, budget, xlsx=True)
    if part == "content.xml":
        return SheetMeter(part, budget, xlsx=False)
    return None

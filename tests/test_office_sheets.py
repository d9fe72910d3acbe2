"""Spreadsheets through a real vaultd and a real confined LibreOffice: a sheet wider than the
page fits the page width (page 1 holds its first and last column), a print area is what is
printed, and a scale the author chose is kept (render/office/fit_width.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import httpx
import pytest

from tests import office_documents as od
from tests.http_helpers import upload_ok
from tests.office_pdf import page_texts, pdf_rendition
from tests.vault_process import VaultProcess, running_vault

pytestmark = [
    pytest.mark.slow,  # starts its own server and LibreOffice (see docs/testing.md)
    pytest.mark.skipif(not shutil.which("soffice"), reason="LibreOffice is not installed"),
]

OCTET = "application/octet-stream"
COLUMNS, ROWS = 40, 30
# Each header is unique text: "Col00" .. "Col39"; cells name their row and column.
WIDE = [[f"Col{c:02d}" for c in range(COLUMNS)]] + [
    [f"r{r}c{c}" for c in range(COLUMNS)] for r in range(1, ROWS)]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("sheets") / "data",
                       VAULTD_UPLOAD_OFFICE="true") as server:
        yield server


def _pages(vault: VaultProcess, api: httpx.Client, data: bytes, name: str) -> list[str]:
    created = upload_ok(api, data, content_type=OCTET, name=name)
    pages = page_texts(pdf_rendition(vault, created["id"]))
    assert created["pageCount"] == len(pages)
    return pages


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_a_wide_sheet_fits_the_page_width(
        vault: VaultProcess, api: httpx.Client, fmt: str) -> None:
    data = od.xlsx([WIDE]) if fmt == "xlsx" else od.ods([WIDE])
    pages = _pages(vault, api, data, f"wide.{fmt}")
    # Unfitted, LibreOffice prints 10 columns a page (4 pages, 6 for the ODS's page style).
    assert len(pages) == 1, pages
    first = pages[0].split()
    assert "Col00" in first and f"Col{COLUMNS - 1:02d}" in first
    assert f"r{ROWS - 1}c{COLUMNS - 1}" in first


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_a_print_area_is_all_that_is_printed(
        vault: VaultProcess, api: httpx.Client, fmt: str) -> None:
    if fmt == "xlsx":
        data = od.xlsx([WIDE], defined_names=(
            '<definedNames><definedName name="_xlnm.Print_Area" localSheetId="0">'
            "Sheet1!$A$1:$C$5</definedName></definedNames>"))
    else:
        data = od.ods([WIDE], table_attributes=' table:print-ranges="Sheet1.A1:Sheet1.C5"')
    [page] = _pages(vault, api, data, f"area.{fmt}")
    words = page.split()
    assert words[:3] == ["Col00", "Col01", "Col02"]
    assert "r4c2" in words
    assert not {"Col03", "r5c0", "r4c3"} & set(words), words


def test_a_scale_the_author_chose_is_kept(vault: VaultProcess, api: httpx.Client) -> None:
    setup = ('<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" '
             'footer="0.3"/><pageSetup scale="40" orientation="portrait"/>')
    pages = _pages(vault, api, od.xlsx([WIDE], sheet_extra=setup), "scaled.xlsx")
    # At 40 % two pages of columns, as the author asked: not refitted to one.
    assert len(pages) == 2, pages
    assert "Col00" in pages[0].split() and "Col39" not in pages[0].split()
    assert "Col39" in pages[1].split()

"""Fitting sheets to the page width, without LibreOffice: the byte edits of a print setup
(render/office/page_setup.py) and the archive rewrite with its defences
(render/office/fit_width.py), on real ZIP files."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from render.office.fit_width import fit_sheets
from render.office.page_setup import fit_page_layouts, fit_worksheet
from render.wire.model import Unreadable
from tests import office_documents as od

NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
FIT = b'<pageSetUpPr fitToPage="1"/>'


def sheet(inner: str, root: str = f"<worksheet {NS}>", close: str = "</worksheet>") -> bytes:
    return (root + inner + close).encode()


def test_a_bare_sheet_gains_a_fit_and_a_page_setup_in_their_places() -> None:
    fitted = fit_worksheet(sheet("<sheetData/><pageMargins left=\"1\"/><drawing r:id=\"x\"/>"))
    assert fitted == sheet(f"<sheetPr>{FIT.decode()}</sheetPr><sheetData/>"
                           '<pageMargins left="1"/><pageSetup fitToWidth="1" fitToHeight="0"/>'
                           '<drawing r:id="x"/>')


def test_existing_properties_and_setup_are_extended_not_replaced() -> None:
    fitted = fit_worksheet(sheet(
        '<sheetPr codeName="S"/><sheetData/><pageSetup paperSize="9" scale="100" '
        'fitToWidth="2" orientation="landscape"/>'))
    assert fitted == sheet(
        f'<sheetPr codeName="S">{FIT.decode()}</sheetPr><sheetData/><pageSetup '
        'fitToWidth="1" fitToHeight="0" paperSize="9" scale="100" orientation="landscape"/>')
    with_children = fit_worksheet(sheet(
        '<sheetPr><tabColor rgb="FF0000"/><pageSetUpPr fitToPage="0"/></sheetPr><sheetData/>'))
    assert with_children == sheet(
        f'<sheetPr><tabColor rgb="FF0000"/>{FIT.decode()}</sheetPr><sheetData/>'
        '<pageSetup fitToWidth="1" fitToHeight="0"/>')


def test_a_prefixed_worksheet_keeps_its_prefix() -> None:
    root = '<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    fitted = fit_worksheet(sheet("<x:sheetData/>", root, "</x:worksheet>"))
    assert fitted == sheet('<x:sheetPr><x:pageSetUpPr fitToPage="1"/></x:sheetPr><x:sheetData/>'
                           '<x:pageSetup fitToWidth="1" fitToHeight="0"/>', root, "</x:worksheet>")


@pytest.mark.parametrize("inner", [
    '<sheetPr><pageSetUpPr fitToPage="1"/></sheetPr><sheetData/>'
    '<pageSetup fitToWidth="3" fitToHeight="2"/>',
    '<sheetData/><pageSetup scale="40"/>',
], ids=["authors-fit", "authors-scale"])
def test_an_authors_fit_or_scale_is_left_alone(inner: str) -> None:
    assert fit_worksheet(sheet(inner)) == sheet(inner)


def test_something_that_is_not_a_worksheet_is_left_alone() -> None:
    assert fit_worksheet(b"<chartsheet/>") == b"<chartsheet/>"
    assert fit_worksheet(sheet("<sheetData/>", close="")) == sheet("<sheetData/>", close="")


def test_page_layouts_fit_unless_their_author_scaled_them() -> None:
    styles = (b'<style:page-layout style:name="a"><style:page-layout-properties '
              b'fo:margin="1cm"/></style:page-layout>'
              b'<style:page-layout style:name="b"><style:page-layout-properties '
              b'style:scale-to="50%"/></style:page-layout>'
              b'<style:page-layout style:name="c"/>'
              b'<style:page-layout style:name="d"><style:header-style/></style:page-layout>')
    scale = b'style:scale-to-X="1" style:scale-to-Y="0"'
    assert fit_page_layouts(styles) == (
        b'<style:page-layout style:name="a"><style:page-layout-properties ' + scale
        + b' fo:margin="1cm"/></style:page-layout>'
        b'<style:page-layout style:name="b"><style:page-layout-properties '
        b'style:scale-to="50%"/></style:page-layout>'
        b'<style:page-layout style:name="c"><style:page-layout-properties ' + scale
        + b"/></style:page-layout>"
        b'<style:page-layout style:name="d"><style:page-layout-properties ' + scale
        + b"/><style:header-style/></style:page-layout>")


def _entries(path: Path) -> list[tuple[str, int, bytes]]:
    with zipfile.ZipFile(path) as archive:
        return [(i.filename, i.compress_type, archive.read(i)) for i in archive.infolist()]


def test_an_xlsx_is_rewritten_with_every_other_entry_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "document.xlsx"
    path.write_bytes(od.xlsx([[["a", "b"]], [["c"]]]))
    before = _entries(path)
    assert fit_sheets(str(path))
    after = _entries(path)
    assert [name for name, _, _ in after] == [name for name, _, _ in before]
    for (name, _, old), (_, _, new) in zip(before, after, strict=True):
        if name.startswith("xl/worksheets/"):
            assert FIT in new and b'fitToWidth="1"' in new
        else:
            assert new == old
    assert not fit_sheets(str(path))  # fitted already: nothing to change


def test_an_ods_without_styles_gets_a_fitted_default_page_style(tmp_path: Path) -> None:
    path = tmp_path / "document.ods"
    path.write_bytes(od.ods([[["a"]]]))
    assert fit_sheets(str(path))
    entries = _entries(path)
    assert entries[0][:2] == ("mimetype", zipfile.ZIP_STORED)  # first and stored, as ODF says
    parts = {name: data for name, _, data in entries}
    assert b'style:scale-to-X="1"' in parts["styles.xml"]
    assert b'full-path="styles.xml"' in parts["META-INF/manifest.xml"]


def test_the_workers_defences_hold_inside_the_converter(tmp_path: Path) -> None:
    path = tmp_path / "document.xlsx"
    laughs = '<!DOCTYPE worksheet [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;">]>'
    path.write_bytes(_with_prolog(od.xlsx([[["&b;"]]]), laughs))
    with pytest.raises(Unreadable, match="declares XML entities"):
        fit_sheets(str(path))
    path.write_bytes(od.xlsx([[["x"]]], sheet_extra="<!--" + " " * (8 << 20) + "-->"))
    with pytest.raises(Unreadable, match="expands too much"):
        fit_sheets(str(path))
    assert not (tmp_path / "document.xlsx.fitted").exists()


def _with_prolog(package: bytes, prolog: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        parts: list[tuple[str, str | bytes]] = [(n, archive.read(n)) for n in archive.namelist()]
    return od.zip_of([(n, prolog.encode() + d if n.startswith("xl/worksheets/") else d)
                      for n, d in parts])


def test_a_damaged_archive_or_another_type_is_converted_as_uploaded(tmp_path: Path) -> None:
    damaged = tmp_path / "document.xlsx"
    damaged.write_bytes(od.xlsx([[["x"]]])[:-30])
    before = damaged.read_bytes()
    assert not fit_sheets(str(damaged))
    assert damaged.read_bytes() == before
    assert not (tmp_path / "document.xlsx.fitted").exists()
    other = tmp_path / "document.docx"
    other.write_bytes(od.docx(["words"]))
    assert not fit_sheets(str(other))

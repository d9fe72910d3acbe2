"""The worker's DTD and nesting checks read an Office XML part in its own encoding: a UTF-16
part (LE or BE, with a byte-order mark or without) is decoded before the checks, and a part in
any other encoding (UTF-32, a declared Latin-1 or UTF-7) is refused. In process, on the same
function the upload's render worker runs (`render.office.formats.scan_parts`); the HTTP side is
tests/test_office_encodings_http.py."""

from __future__ import annotations

import pytest

from render.office.formats import HAS_DTD, TOO_DEEP, scan_parts
from render.office.xml_encoding import NOT_UTF
from render.wire.model import Unreadable
from tests.office_encoded import LAUGHS, encoded_docx, nested, parts_of


def _scan(package: bytes) -> None:
    with parts_of(package) as archive:
        scan_parts(archive, archive.infolist())


@pytest.mark.parametrize("bom", [True, False], ids=["bom", "no-bom"])
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-8"])
def test_a_dtd_is_found_in_each_accepted_encoding(encoding: str, bom: bool) -> None:
    with pytest.raises(Unreadable) as refused:
        _scan(encoded_docx(encoding, bom=bom, prolog=LAUGHS))
    assert str(refused.value) == HAS_DTD


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_deep_nesting_is_counted_in_utf16(encoding: str) -> None:
    with pytest.raises(Unreadable) as refused:
        _scan(encoded_docx(encoding, body_extra=nested()))
    assert str(refused.value) == TOO_DEEP


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-8"])
def test_a_plain_document_passes_in_each_accepted_encoding(encoding: str) -> None:
    _scan(encoded_docx(encoding, body_extra=nested(200)))  # no exception


@pytest.mark.parametrize(("encoding", "bom", "declared"), [
    ("utf-32-le", True, None), ("utf-32-be", True, None), ("utf-32-le", False, None),
    ("utf-32-be", False, None), ("latin-1", False, "ISO-8859-1"), ("utf-7", False, "UTF-7"),
    ("utf-8", False, "UTF-16"), ("utf-16-le", True, "ISO-8859-1")])
def test_any_other_encoding_is_refused(encoding: str, bom: bool, declared: str | None) -> None:
    with pytest.raises(Unreadable) as refused:
        _scan(encoded_docx(encoding, bom=bom, declared=declared, prolog=LAUGHS))
    assert str(refused.value) == NOT_UTF


def test_a_utf16_part_that_is_not_utf16_is_refused() -> None:
    package = encoded_docx("utf-16-le")
    with parts_of(package) as archive:
        parts = [(name, archive.read(name)) for name in archive.namelist()]
    from tests import office_documents as od
    broken = [(name, data + b"\x00\xd8" if name == "word/document.xml" else data)
              for name, data in parts]  # a lone high surrogate at the end
    with pytest.raises(Unreadable) as refused:
        _scan(od.zip_of(broken))
    assert str(refused.value) == NOT_UTF

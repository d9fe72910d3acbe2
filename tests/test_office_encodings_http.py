"""The Office DTD and nesting checks over HTTP, against documents whose XML is UTF-16: a
`document.xml` in UTF-16 LE or BE (with a byte-order mark or without) that declares entities,
or nests elements 60,000 deep, is refused at upload with the same 422 as its UTF-8 twin; UTF-32
is refused as an encoding vaultd does not read; a plain UTF-16 document converts. A real vaultd
with Office uploads on and a real LibreOffice (docs/security.md, "The Office converter")."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, upload, upload_ok
from tests.office_encoded import LAUGHS, encoded_docx, nested
from tests.office_pdf import page_texts, pdf_rendition
from tests.vault_process import VaultProcess, running_vault

pytestmark = [
    pytest.mark.slow,  # starts its own vaultd and LibreOffice
    pytest.mark.skipif(not shutil.which("soffice"), reason="LibreOffice is not installed"),
]

OCTET = "application/octet-stream"
HAS_DTD = "the Office document declares XML entities (a DTD), which Office formats never do"
TOO_DEEP = "the Office document nests XML elements deeper than 1000 levels"
NOT_UTF = "the Office document has an XML part in an encoding other than UTF-8 or UTF-16"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("office-encodings") / "data",
                       VAULTD_UPLOAD_OFFICE="true") as server:
        yield server


@pytest.mark.parametrize("bom", [True, False], ids=["bom", "no-bom"])
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_document_declaring_entities_is_refused(api: httpx.Client, encoding: str,
                                                        bom: bool) -> None:
    external = '<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    for prolog in (LAUGHS, external):
        assert_json_error(upload(api, encoded_docx(encoding, bom, prolog=prolog),
                                 content_type=OCTET), 422, HAS_DTD)


@pytest.mark.parametrize("bom", [True, False], ids=["bom", "no-bom"])
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_document_nested_60000_deep_is_refused(api: httpx.Client, encoding: str,
                                                       bom: bool) -> None:
    assert_json_error(upload(api, encoded_docx(encoding, bom, body_extra=nested()),
                             content_type=OCTET), 422, TOO_DEEP)


def test_a_utf32_document_is_refused_and_the_server_keeps_serving(api: httpx.Client) -> None:
    for encoding in ("utf-32-le", "utf-32-be"):
        assert_json_error(upload(api, encoded_docx(encoding, prolog=LAUGHS), content_type=OCTET),
                          422, NOT_UTF)
    assert upload_ok(api, docs.pdf(1))["pageCount"] == 1


def test_a_plain_utf16_document_converts(vault: VaultProcess, api: httpx.Client) -> None:
    created = upload_ok(api, encoded_docx("utf-16-le"), content_type=OCTET, name="wide.docx")
    assert created["pageCount"] == 1
    assert "encoded" in page_texts(pdf_rendition(vault, created["id"]))[0]

"""Office uploads against a real vaultd and a real, confined LibreOffice: each format becomes a
PDF rendition whose pages carry the document's text, a delivery file downloads as uploaded, and
ZIPs that are not Office documents, legacy files and hostile archives get their documented 4xx
while the server keeps serving (docs/security.md, "Office converter")."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import httpx
import pytest

from tests import documents as docs
from tests import office_documents as od
from tests.http_helpers import assert_json_error, create_link, upload, upload_ok
from tests.office_pdf import converters_running, page_texts, pdf_rendition
from tests.vault_process import ROOT, VaultProcess, base_env, running_vault
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.slow,  # starts its own servers and LibreOffice (see docs/testing.md)
    pytest.mark.skipif(not shutil.which("soffice"), reason="LibreOffice is not installed"),
]

NOT_OURS = "content is not a PDF, JPEG or PNG file"
OCTET = "application/octet-stream"
FORMATS: dict[str, tuple[Callable[[list[str]], bytes], str]] = {
    "docx": (od.docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    "pptx": (od.pptx, "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    "odt": (od.odt, "application/vnd.oasis.opendocument.text"),
    "odp": (od.odp, "application/vnd.oasis.opendocument.presentation"),
    "xlsx": (lambda texts: od.xlsx([[[t]] for t in texts]),
             "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "ods": (lambda texts: od.ods([[[t]] for t in texts]),
            "application/vnd.oasis.opendocument.spreadsheet"),
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("office") / "data",
                       VAULTD_UPLOAD_OFFICE="true") as server:
        yield server


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_uploads_and_its_pages_carry_its_text(
        vault: VaultProcess, api: httpx.Client, fmt: str) -> None:
    build, content_type = FORMATS[fmt]
    texts = [f"{fmt} first page quarterly", f"{fmt} second page confidential"]
    created = upload_ok(api, build(texts), content_type=OCTET, name=f"report.{fmt}")
    assert (created["contentType"], created["pageCount"]) == (content_type, 2)
    pages = page_texts(pdf_rendition(vault, created["id"]))
    assert len(pages) == 2
    for page, text in zip(pages, texts, strict=True):
        assert text in page, (page, text)  # a spreadsheet's page also names its sheet
    token = create_link(api, created["id"])["token"]
    for number in (1, 2):
        page = api.get(f"/views/{token}/pages/{number}")
        assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"
    assert_json_error(api.get(f"/views/{token}/pages/3"), 404, "page not found")


def test_an_office_page_is_traced_and_counted_like_a_pdfs(api: httpx.Client) -> None:
    created = upload_ok(api, od.pptx(["deck cover", "deck numbers"]), content_type=OCTET,
                        name="Board deck.pptx")
    token = create_link(api, created["id"], "dana@example.com", viewerName="Dana Scully")["token"]
    page = api.get(f"/views/{token}/pages/2", headers={"x-viewer-ip": "203.0.113.9"})
    assert page.status_code == 200
    traced = api.post("/trace", content=page.content, headers={"Content-Type": "image/jpeg"},
                      timeout=120)
    assert traced.status_code == 200, traced.text
    [match] = traced.json()["matches"]
    assert (match["fileId"], match["fileName"], match["page"], match["viewerEmail"]) == (
        created["id"], "Board deck.pptx", 2, "dana@example.com")

    def page_two_counted() -> bool:
        pages = api.get(f"/views/{token}/analytics").json()["pages"]
        return bool(pages == [{"page": 1, "views": 0, "seconds": 0.0},
                              {"page": 2, "views": 1, "seconds": 0.0}])
    wait_until(page_two_counted, timeout=10)


def test_a_delivery_office_file_downloads_byte_identical(api: httpx.Client) -> None:
    build, content_type = FORMATS["docx"]
    data = build(["the deliverable"])
    created = upload_ok(api, data, content_type=content_type, kind="delivery", name="d.docx")
    download = api.get(f"/files/{created['id']}/download")
    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"] == content_type


@pytest.mark.parametrize("data", [
    od.zip_of([("notes.txt", "just a zip")]),
    od.zip_of([("[Content_Types].xml", "<Types/>"), ("word/document.xml", "<w:document/>")]),
    od.zip_of([("mimetype", "application/epub+zip"), ("content.xml", "<x/>")], True),
    od.docx(["truncated"])[:300],
], ids=["random-zip", "ooxml-without-main-part", "epub", "truncated-archive"])
def test_a_zip_that_is_not_an_office_document_is_refused_with_the_specs_415(
        api: httpx.Client, data: bytes) -> None:
    assert_json_error(upload(api, data, content_type=OCTET), 415, NOT_OURS)
    assert api.get("/files").json()["files"] == []


def test_a_legacy_office_file_is_refused_naming_the_modern_formats(api: httpx.Client) -> None:
    ole2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 4096
    assert_json_error(upload(api, ole2, content_type=OCTET), 415,
                      "legacy Office files (.doc, .xls, .ppt) are not accepted: save the "
                      "document as DOCX, XLSX, PPTX, ODT, ODS or ODP, or as a PDF")


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        self.wfile.write(docs.png())

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], _Recorder.hits
    finally:
        server.shutdown()
        server.server_close()


def _linked_images(targets: list[str]) -> tuple[str, str]:
    """Body XML drawing each target as an externally linked picture, and its relationships."""
    pictures, rels = "", ""
    for i, target in enumerate(targets):
        rid = f"rIdX{i}"
        rels += (f'<Relationship Id="{rid}" Type="http://schemas.openxmlformats.org/'
                 f'officeDocument/2006/relationships/image" Target="{target}" '
                 'TargetMode="External"/>')
        pictures += (
            '<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/'
            'drawingml/2006/wordprocessingDrawing"><wp:extent cx="914400" cy="914400"/>'
            f'<wp:docPr id="{i + 1}" name="p{i}"/><a:graphic><a:graphicData uri="http://'
            'schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://'
            'schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr '
            f'id="{i + 1}" name="p{i}"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip '
            f'r:link="{rid}"/></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext '
            'cx="914400" cy="914400"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic>'
            "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>")
    return pictures, rels


def test_linked_images_and_files_are_never_fetched(
        vault: VaultProcess, api: httpx.Client, listener: tuple[int, list[str]]) -> None:
    port, hits = listener
    pictures, rels = _linked_images(
        ["file:///etc/passwd", f"http://127.0.0.1:{port}/remote.png", "file:///etc/hostname"])
    field = ('<w:p><w:fldSimple w:instr="INCLUDETEXT &quot;file:///etc/passwd&quot;">'
             "<w:r><w:t>include</w:t></w:r></w:fldSimple></w:p>")
    data = od.docx(["links inside"], body_extra=pictures + field, rels_extra=rels)
    created = upload_ok(api, data, content_type=OCTET, name="links.docx")
    text = " ".join(page_texts(pdf_rendition(vault, created["id"])))
    assert "links inside" in text
    assert "root:" not in text
    assert hits == []  # LibreOffice asked the listener for nothing


def test_an_entity_bomb_and_a_zip_bomb_are_refused_and_the_server_keeps_serving(
        api: httpx.Client) -> None:
    laughs = ('<!DOCTYPE w:document [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
              '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>')
    assert_json_error(upload(api, od.docx(["&c;"], prolog=laughs), content_type=OCTET), 422,
                      "the Office document declares XML entities (a DTD), which Office "
                      "formats never do")
    bomb = od.docx(["bomb"], body_extra=" " * (300 << 20))
    assert_json_error(upload(api, bomb, content_type=OCTET), 422,
                      "the Office document expands too much (a ZIP bomb?)")
    assert upload_ok(api, docs.pdf(1))["pageCount"] == 1


def test_deeply_nested_xml_is_refused_before_libreoffice_sees_it(api: httpx.Client) -> None:
    depth = 600  # two elements a level: 1,200 levels
    nested = "<w:sdt><w:sdtContent>" * depth + "</w:sdtContent></w:sdt>" * depth
    assert_json_error(upload(api, od.docx(["nested"], body_extra=nested), content_type=OCTET),
                      422, "the Office document nests XML elements deeper than 1000 levels")
    shallow = "<w:sdt><w:sdtContent>" * 100 + "</w:sdtContent></w:sdt>" * 100
    created = upload_ok(api, od.docx(["shallow"], body_extra=shallow), content_type=OCTET)
    assert created["pageCount"] == 1


def test_office_files_are_refused_by_default_as_the_spec_says(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    data = od.docx(["off"])  # upload.office is off unless turned on: PDF, JPEG, PNG only
    with running_vault(tmp_path_factory.mktemp("office-off") / "data") as server:
        key = server.new_account()[1]
        with server.client(key) as client:
            assert_json_error(upload(client, data, content_type=OCTET), 415, NOT_OURS)
            legacy = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 4096  # a .doc: also 415
            assert_json_error(upload(client, legacy, content_type=OCTET), 415, NOT_OURS)


TOO_SLOW = "the document took longer than 1 s to convert"
BUSY = "the Office converter is busy; retry shortly"
ACCOUNT_BUSY = ("this account already has 2 Office documents converting or waiting; retry when "
                "one is done")


def test_a_conversion_past_its_deadline_is_killed_and_the_queue_is_bounded(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # A 1 s deadline and a spreadsheet that keeps LibreOffice busy for minutes: every conversion
    # is killed at its deadline, however fast LibreOffice starts on this machine.
    with running_vault(tmp_path_factory.mktemp("office-slow") / "data",
                       VAULTD_UPLOAD_OFFICE="true",
                       VAULTD_UPLOAD_OFFICE_TIMEOUT_SECONDS="1") as server:
        keys = [server.new_account()[1] for _ in range(3)]  # 4 uploads at once per account
        with server.client(keys[0]) as client:
            assert_json_error(upload(client, od.xlsx_that_hangs(), content_type=OCTET), 422,
                              TOO_SLOW)
        answers = _uploads_at_once(server, keys, od.xlsx_that_hangs(), per_key=4)
        statuses = sorted(response.status_code for response in answers)
        assert statuses.count(422) >= 1 + 4 and statuses.count(429) >= 1, statuses
        for response in answers:
            if response.status_code == 422:
                assert_json_error(response, 422, TOO_SLOW)
            else:  # the queue is full, or the account holds its share of it
                assert_json_error(response, 429,
                                  re.compile(f"{re.escape(BUSY)}|{re.escape(ACCOUNT_BUSY)}"))
        with server.client(keys[0]) as client:
            assert upload_ok(client, docs.pdf(1))["pageCount"] == 1
    assert not converters_running()


def test_documents_that_hang_libreoffice_are_killed_and_the_next_one_converts(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # A formula sheet computing for minutes and a 20 KB DOCX of 100,000 pages to lay out (no
    # field loop hangs LibreOffice 7.4: see tests/office_documents.py): each is killed at its
    # deadline with its whole process group, and the server converts the next document.
    with running_vault(tmp_path_factory.mktemp("office-hang") / "data",
                       VAULTD_UPLOAD_OFFICE="true",
                       VAULTD_UPLOAD_OFFICE_TIMEOUT_SECONDS="12") as server:
        key = server.new_account()[1]
        with server.client(key) as client:
            for hang in (od.xlsx_that_hangs(), od.docx_that_hangs()):
                started = time.monotonic()
                assert_json_error(upload(client, hang, content_type=OCTET), 422,
                                  "the document took longer than 12 s to convert")
                assert time.monotonic() - started >= 12
                assert not converters_running()
                created = upload_ok(client, od.docx(["after the hang"]), content_type=OCTET)
                assert created["pageCount"] == 1


def _uploads_at_once(server: VaultProcess, keys: list[str], data: bytes,
                     per_key: int) -> list[httpx.Response]:
    clients = [server.client(key) for key in keys for _ in range(per_key)]
    barrier = threading.Barrier(len(clients))

    def send(client: httpx.Client) -> httpx.Response:
        barrier.wait()
        return upload(client, data, content_type=OCTET)

    try:
        with ThreadPoolExecutor(len(clients)) as pool:
            return list(pool.map(send, clients))
    finally:
        for client in clients:
            client.close()


def test_doctor_reports_the_converter_installed_and_confined() -> None:
    done = subprocess.run([sys.executable, "-m", "admin_cli.main", "doctor", "--json"],
                          cwd=ROOT, env=base_env({"VAULTD_UPLOAD_OFFICE": "true"}),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    converter = json.loads(done.stdout)["officeConverter"]
    assert (converter["installed"], converter["converted"], converter["complete"]) == (
        True, True, True)
    assert converter["layers"]["net_namespace"] and converter["layers"]["landlock_fs"]

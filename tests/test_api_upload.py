"""POST /v1/files: streamed, validated, typed by content, quota-checked, all or nothing."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, upload, upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until


def blob_names(vault: VaultProcess) -> set[str]:
    return {p.name for p in (vault.data_dir / "blobs").iterdir()}


def test_a_pdf_upload_returns_the_file_with_detected_type_and_page_count(api: httpx.Client) -> None:
    body = upload_ok(api, docs.pdf(pages=3), content_type="application/octet-stream",
                     name="Q3 report.pdf")
    assert body["name"] == "Q3 report.pdf"
    assert body["kind"] == "source"
    assert body["contentType"] == "application/pdf"
    assert body["pageCount"] == 3
    assert body["size"] == len(docs.pdf(pages=3))
    assert body["createdAt"].endswith("Z") and len(body["createdAt"]) == 24
    assert "activeLinks" not in body
    assert set(body) == {"id", "name", "kind", "contentType", "size", "pageCount", "createdAt"}


@pytest.mark.parametrize(("make", "declared", "detected"), [
    (docs.jpeg, "image/png", "image/jpeg"),
    (docs.png, "application/pdf", "image/png"),
])
def test_images_are_one_page_and_typed_by_their_bytes(api: httpx.Client, make, declared: str,
                                                       detected: str) -> None:
    body = upload_ok(api, make(), content_type=declared, kind="delivery")
    assert (body["contentType"], body["pageCount"], body["kind"]) == (detected, 1, "delivery")


@pytest.mark.parametrize("name", ["caf%E9.pdf", "%C3%28.pdf", "%ED%A0%80.pdf"])
def test_names_whose_escapes_are_not_utf8_are_refused_like_decodeuricomponent(
    vault: VaultProcess, api: httpx.Client, name: str
) -> None:
    before = blob_names(vault)
    response = api.post("/files", content=docs.pdf(), headers={
        "Content-Type": "application/pdf", "x-file-name": name})
    assert_json_error(response, 400, re.compile(
        r"x-file-name is not valid URI-component encoding.*not UTF-8.*encodeURIComponent.*"))
    assert blob_names(vault) == before


def test_a_pdf_with_its_newlines_stripped_is_422_and_says_to_send_the_raw_file(
    vault: VaultProcess, api: httpx.Client
) -> None:
    # What `curl -d @x.pdf -H 'Content-Type: application/pdf'` sends.
    stripped = docs.pdf(pages=1).replace(b"\r", b"").replace(b"\n", b"")
    before = blob_names(vault)
    response = api.post("/files", content=stripped, headers={"Content-Type": "application/pdf"})
    assert_json_error(response, 422, re.compile(re.escape(
        "the PDF is damaged or not a PDF; it has no line breaks at all, as when curl -d strips "
        "them: send the file itself as the body") + r".*curl --data-binary @file\.pdf.*"))
    assert blob_names(vault) == before
    damaged = api.post("/files", content=b"%PDF-1.7\n" + b"garbage" * 100,
                       headers={"Content-Type": "application/pdf"})
    assert_json_error(damaged, 422, "the PDF is damaged or not a PDF")  # no hint: not stripped


@pytest.mark.parametrize(("content_type", "body", "taught"), [
    ("multipart/form-data; boundary=x",
     b"--x\r\nContent-Disposition: form-data; name=file; filename=a.pdf\r\n\r\n%PDF-1.7\r\n--x--",
     "the body is a multipart form, not the file"),
    ("application/x-www-form-urlencoded", b"%PDF-1.7%0A", "the body is form-encoded"),
])
def test_form_bodies_are_415_and_say_to_send_the_raw_file(
    vault: VaultProcess, api: httpx.Client, content_type: str, body: bytes, taught: str
) -> None:
    before = blob_names(vault)
    response = api.post("/files", content=body, headers={"Content-Type": content_type})
    error = assert_json_error(response, 415, re.compile(
        re.escape(taught) + r".*curl --data-binary @file\.pdf.*"))
    assert set(error) == {"error"}  # alone, as every error body
    assert blob_names(vault) == before


def test_names_are_decoded_truncated_to_200_and_default_to_document(api: httpx.Client) -> None:
    assert upload_ok(api, docs.pdf(), name="Éte 日本 ✓.pdf")["name"] == "Éte 日本 ✓.pdf"
    assert upload_ok(api, docs.pdf(), name="x" * 250)["name"] == "x" * 200
    assert upload_ok(api, docs.pdf())["name"] == "document"


BAD_NAME = "x-file-name is not valid URI-component encoding"
BAD_TYPE = ("Content-Type must be application/pdf, image/jpeg, image/png or "
            "application/octet-stream")
NOT_A_DOCUMENT = "content is not a PDF, JPEG or PNG file"
DAMAGED_PDF = "the PDF is damaged or not a PDF"


@pytest.mark.parametrize(("headers", "body", "status", "message"), [
    ({"Content-Type": "application/pdf"}, b"", 400, "request body is empty"),
    ({"Content-Type": "application/pdf", "x-file-kind": "secret"}, None, 400,
     "x-file-kind must be source or delivery"),
    ({"Content-Type": "application/pdf", "x-file-name": "bad%zzname"}, None, 400, BAD_NAME),
    ({"Content-Type": "application/pdf", "x-file-name": "%E0%A4%A"}, None, 400, BAD_NAME),
    ({"Content-Type": "text/plain"}, None, 415, BAD_TYPE),
    ({}, None, 415, BAD_TYPE),
    ({"Content-Type": "application/pdf"}, b"GIF89a" + b"\0" * 100, 415, NOT_A_DOCUMENT),
    ({"Content-Type": "application/pdf"}, b"%PDF", 415, NOT_A_DOCUMENT),
    ({"Content-Type": "application/pdf"}, b"%PDF-1.7\n" + b"garbage" * 100, 422, DAMAGED_PDF),
])
def test_bad_uploads_get_the_spec_status_and_store_nothing(
    vault: VaultProcess, api: httpx.Client, headers: dict, body: bytes | None, status: int,
    message: str
) -> None:
    before = blob_names(vault)
    response = api.post("/files", content=docs.pdf() if body is None else body, headers=headers)
    error = assert_json_error(response, status, message)
    assert set(error) == {"error"}  # alone, before a handler as after
    assert blob_names(vault) == before
    assert api.get("/account").json()["usage"]["documents"] == 0


@pytest.mark.parametrize(("make", "message"), [
    (docs.encrypted_pdf, "the PDF is password-protected"),
    (docs.truncated_pdf, DAMAGED_PDF),
    (docs.png_bomb, "the image is damaged or too large"),
    (docs.truncated_jpeg, "the image is damaged or too large"),
    (docs.png_bad_crc, "the image is damaged or too large"),
])
def test_recognised_but_unreadable_files_get_422(vault: VaultProcess, api: httpx.Client,
                                                 make, message: str) -> None:
    before = blob_names(vault)
    assert_json_error(upload(api, make(), content_type="application/octet-stream"), 422,
                      message)
    assert blob_names(vault) == before
    assert api.get("/account").json()["usage"] == {
        "documents": 0, "storageBytes": 0, "activeLinks": 0, "apiKeys": 1}


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


def test_a_chunked_body_in_tiny_pieces_crosses_every_boundary(api: httpx.Client) -> None:
    data = docs.pdf(pages=2)
    body = upload_ok(api, chunked(data, 3))
    assert body["size"] == len(data)
    files = api.get("/files").json()["files"]
    assert files[0]["id"] == body["id"]


def test_a_client_that_disconnects_mid_upload_leaves_nothing(vault: VaultProcess,
                                                             account: tuple[str, str]) -> None:
    before = blob_names(vault)
    data = docs.pdf(pages=5)
    with socket.create_connection(("127.0.0.1", vault.port)) as sock:
        sock.sendall(
            b"POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Type: application/pdf\r\n"
            + f"Authorization: Bearer {account[1]}\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data[: len(data) // 2]
        )
    with vault.client(account[1]) as client:
        # The server notices the close asynchronously.
        wait_until(lambda: blob_names(vault) == before, timeout=5, what="the partial blob gone")
        assert client.get("/account").json()["usage"]["documents"] == 0
        assert client.get("/files").json()["total"] == 0


def test_concurrent_uploads_never_pass_the_document_limit(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Small Co", plan="free")

    async def almost_full(db) -> None:
        await db.accounts.update_one({"_id": account_id}, {"$set": {"usage.documents": 97}})

    vault.run_service(almost_full)
    data = docs.pdf()
    with vault.client(key) as client, ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: upload(client, data), range(8)))
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [201] * 3 + [402] * 5
        for r in responses:
            if r.status_code == 402:
                assert "Free" in r.json()["error"] and "100" in r.json()["error"]
        usage = client.get("/account").json()["usage"]
        assert usage["documents"] == 100
        assert usage["storageBytes"] == 3 * len(data)
        listing = client.get("/files").json()
        assert len(listing["files"]) == 3
        # `total` is the account's documents counter, here set to 97 beforehand.
        assert listing["total"] == usage["documents"]


def test_the_storage_limit_is_enforced_and_named(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Full Co", plan="free")
    data = docs.pdf()

    async def nearly_full(db) -> None:
        await db.accounts.update_one(
            {"_id": account_id}, {"$set": {"usage.storageBytes": 1024**3 - len(data) + 1}})

    vault.run_service(nearly_full)
    with vault.client(key) as client:
        assert_json_error(upload(client, data), 402,
                          f"storage limit reached: plan Free allows {1024**3} bytes")
        assert client.get("/files").json()["total"] == 0

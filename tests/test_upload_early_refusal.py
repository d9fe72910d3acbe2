"""Uploads refused by their headers (plan, uploads in progress, declared size) are answered as
soon as the headers are read: before any body byte is sent, and instead of `100 Continue` when
the client asked for one. Over raw sockets, so the order of bytes on the wire is what is tested;
and with curl, which asks for `100 Continue` before a large body."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import documents as docs
from tests.inprocess import inprocess_vault
from tests.raw_posts import read_response, start_post
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own server (see docs/testing.md)

LIMIT = 3_000_000
STORAGE_FULL = f"storage limit reached: plan Free allows {1024**3} bytes"
TOO_MANY = ("too many uploads in progress for this account (at most 1); retry when one has "
            "finished")
TOO_LARGE = f"file larger than the {LIMIT} byte limit"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("early") / "data", VAULTD_RENDER_WORKERS="1",
                         VAULTD_UPLOAD_MAX_BYTES=str(LIMIT),
                         VAULTD_UPLOAD_MAX_CONCURRENT_PER_ACCOUNT="1") as vault:
        yield vault


def full_account(server: VaultProcess) -> str:
    """The key of a Free account with 1000 bytes of room left."""
    account_id, key = server.new_account("Full Co", plan="free")

    async def nearly_full(db: Any) -> None:
        await db.accounts.update_one(
            {"_id": account_id}, {"$set": {"usage.storageBytes": 1024**3 - 1000}})

    server.run_service(nearly_full)
    return key


def send_headers(server: VaultProcess, key: str, length: int, expect: bool = False,
                 ) -> socket.socket:
    """A POST /v1/files whose headers alone are sent."""
    lines = ["POST /v1/files HTTP/1.1", "Host: x", f"Authorization: Bearer {key}",
             "Content-Type: application/pdf", f"Content-Length: {length}"]
    if expect:
        lines.append("Expect: 100-continue")
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def still_serves(sock: socket.socket, key: str) -> bool:
    """The kept connection answers a next request."""
    sock.sendall(f"GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n"
                 .encode())
    head, body = read_response(sock)
    return head.startswith(b"HTTP/1.1 200 ") and body["usage"] is not None


def temporaries(server: VaultProcess) -> list[Path]:
    return list((server.data_dir / "blobs").glob(".tmp-*"))


def usage(server: VaultProcess, key: str) -> tuple[int, int]:
    with server.client(key) as api:
        found = api.get("/account").json()["usage"]
    return found["documents"], found["storageBytes"]


def test_a_plan_refusal_arrives_before_any_body_byte_and_the_connection_stays(
    server: VaultProcess,
) -> None:
    key = full_account(server)
    body = docs.pdf() + b"%" * 5000
    with send_headers(server, key, len(body)) as sock:
        head, answer = read_response(sock)  # nothing of the body was sent
        assert head.startswith(b"HTTP/1.1 402 "), head
        assert answer == {"error": STORAGE_FULL}
        assert b"connection: close" not in head.lower()
        sock.sendall(body)  # a client that sends everything anyway: read and dropped
        assert still_serves(sock, key)
    assert usage(server, key) == (0, 1024**3 - 1000)


def test_with_expect_100_continue_the_refusal_comes_instead_of_the_100(
    server: VaultProcess,
) -> None:
    key = full_account(server)
    body = docs.pdf() + b"%" * 5000
    with send_headers(server, key, len(body), expect=True) as sock:
        head, answer = read_response(sock)
        assert head.startswith(b"HTTP/1.1 402 "), head  # no "HTTP/1.1 100" before it
        assert answer == {"error": STORAGE_FULL}
        assert b"connection: close" not in head.lower()
        sock.sendall(body)  # RFC 9110 lets the client send the body anyway, or close
        assert still_serves(sock, key)


def test_the_upload_cap_refusal_arrives_before_any_body_byte(server: VaultProcess) -> None:
    _, key = server.new_account()
    data = docs.pdf()
    held = start_post(server.port, "/v1/files", key, "application/pdf", data, sent=10)
    try:
        # Its first bytes are stored (a temporary blob) once it holds the account's one slot.
        wait_until(lambda: temporaries(server), what="the first upload under way")
        with send_headers(server, key, len(data), expect=True) as sock:
            head, answer = read_response(sock)
            assert head.startswith(b"HTTP/1.1 429 "), head
            assert b"\r\nretry-after: 5" in head.lower()
            assert answer == {"error": TOO_MANY}
    finally:
        held.close()


def test_a_declared_length_over_the_limit_is_413_before_any_body_byte(
    server: VaultProcess,
) -> None:
    _, key = server.new_account()
    with send_headers(server, key, LIMIT + 1, expect=True) as sock:
        head, answer = read_response(sock)
        assert head.startswith(b"HTTP/1.1 413 "), head
        assert answer == {"error": TOO_LARGE}


def test_a_declared_length_too_large_to_drain_is_answered_and_closed(
    server: VaultProcess,
) -> None:
    _, key = server.new_account()
    with send_headers(server, key, 10 * LIMIT) as sock:
        head, answer = read_response(sock)
        assert head.startswith(b"HTTP/1.1 413 ") and b"connection: close" in head.lower()
        assert answer["error"] == TOO_LARGE
        assert sock.recv(100) == b""  # closed by the server


def curl_upload(server: VaultProcess, key: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["curl", "-sS", "-v", "-X", "POST", f"{server.url}/v1/files",
         "-H", f"Authorization: Bearer {key}", "-H", "Content-Type: image/png",
         "-H", "x-file-kind: delivery", "--data-binary", f"@{path}",
         "-w", "\nuploaded=%{size_upload} status=%{http_code}"],
        capture_output=True, text=True, timeout=60, check=False)


def test_curl_with_a_large_file_gets_100_continue_and_stores_it(
    server: VaultProcess, tmp_path: Path
) -> None:
    _, key = server.new_account()
    data = docs.png_of_size(2_000_000)
    path = tmp_path / "big.png"
    path.write_bytes(data)
    result = curl_upload(server, key, path)
    assert "> Expect: 100-continue" in result.stderr
    assert "< HTTP/1.1 100 " in result.stderr
    assert "uploaded=2000000 status=201" in result.stdout, result.stdout
    created = json.loads(result.stdout.rsplit("\n", 1)[0])
    with server.client(key) as api:
        download = api.get(f"/files/{created['id']}/download")
        assert download.status_code == 200 and download.content == data


def test_curl_refused_by_its_plan_sends_no_body(server: VaultProcess, tmp_path: Path) -> None:
    key = full_account(server)
    path = tmp_path / "big.png"
    path.write_bytes(docs.png_of_size(2_000_000))
    result = curl_upload(server, key, path)
    assert "< HTTP/1.1 100 " not in result.stderr
    assert result.stdout.endswith("uploaded=0 status=402"), result.stdout
    assert json.loads(result.stdout.rsplit("\n", 1)[0]) == {"error": STORAGE_FULL}

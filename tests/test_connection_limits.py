"""Connection and body limits, attempted over real sockets against a real vaultd: small JSON
bodies, the connection cap, the header timeout, body idle timeouts, and EMFILE."""

from __future__ import annotations

import json
import resource
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error
from tests.vault_process import ROOT, VaultProcess, base_env, running_vault
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

JSON_LIMIT = 16 << 10
TOO_LARGE = f"request body larger than the {JSON_LIMIT} byte limit"
BUSY = "too many open connections; retry shortly"


@pytest.fixture(scope="module")
def tight_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("tight") / "data", VAULTD_MAX_CONNECTIONS="24",
                       VAULTD_HEADER_TIMEOUT_SECONDS="2", VAULTD_BODY_IDLE_TIMEOUT_SECONDS="1.5",
                       VAULTD_RENDER_WORKERS="1") as server:
        yield server


@pytest.fixture
def key(tight_vault: VaultProcess) -> str:
    return tight_vault.new_account()[1]


def raw_request(port: int, data: bytes, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (ConnectionResetError, TimeoutError):
        pass
    return b"".join(chunks)


def body_of(raw: bytes) -> dict:
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


def test_a_json_body_over_16_kib_is_refused_413_from_its_content_length(
    tight_vault: VaultProcess, key: str
) -> None:
    with tight_vault.client(key) as api:
        big = {"fileId": "x" * (JSON_LIMIT + 10), "viewerEmail": "a@example.com"}
        body = assert_json_error(api.post("/views", json=big), 413, TOO_LARGE)
        assert body == {"error": TOO_LARGE}
        # The connection stays usable: the refused body was read and dropped.
        assert api.get("/account").status_code == 200


def test_deeply_nested_json_past_16_kib_is_refused_413_before_it_is_parsed(
    tight_vault: VaultProcess, key: str
) -> None:
    with tight_vault.client(key) as api:
        response = api.post("/views", content=b"[" * 500_000,
                            headers={"Content-Type": "application/json"})
        assert_json_error(response, 413, TOO_LARGE)


def test_an_unauthenticated_large_body_is_refused_before_it_is_buffered(
    tight_vault: VaultProcess,
) -> None:
    head = (b"POST /v1/views HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000\r\n\r\n")
    with socket.create_connection(("127.0.0.1", tight_vault.port), timeout=10) as sock:
        sock.sendall(head + b"{" + b" " * 20000)  # the answer comes without the rest
        sock.settimeout(5)
        sock.sendall(b" " * (1000000 - 20001))
        raw = read_all(sock)
    assert raw.startswith(b"HTTP/1.1 413 "), raw[:200]
    assert body_of(raw)["error"] == TOO_LARGE


def test_a_declared_body_over_the_drain_limit_gets_413_at_once_and_a_close(
    tight_vault: VaultProcess,
) -> None:
    head = (b"POST /v1/views HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 50000000\r\n\r\n")
    with socket.create_connection(("127.0.0.1", tight_vault.port), timeout=10) as sock:
        sock.sendall(head)
        raw = read_all(sock)
    assert raw.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in raw
    assert body_of(raw)["error"] == TOO_LARGE


def test_a_chunked_json_body_is_refused_413_as_soon_as_it_passes_16_kib(
    tight_vault: VaultProcess, key: str
) -> None:
    def pieces() -> Iterator[bytes]:
        yield b'{"fileId": "'
        for _ in range(40):
            yield b"x" * 1024
        yield b'"}'

    with tight_vault.client(key) as api:
        response = api.post("/views", content=pieces(),
                            headers={"Content-Type": "application/json"})
        assert_json_error(response, 413, TOO_LARGE)


def test_a_json_body_just_under_the_limit_reaches_the_handler(
    tight_vault: VaultProcess, key: str
) -> None:
    with tight_vault.client(key) as api:
        body = {"fileId": "y" * (JSON_LIMIT - 100), "viewerEmail": "a@example.com"}
        response = api.post("/views", json=body)
        assert response.status_code in (400, 404) and "fileId" in response.json()["error"]


def test_connections_over_the_cap_get_503_and_slots_return_after_the_header_timeout(
    tight_vault: VaultProcess,
) -> None:
    held = []
    try:
        for _ in range(30):  # half-sent requests, as a slow-loris client sends them
            sock = socket.create_connection(("127.0.0.1", tight_vault.port), timeout=10)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            held.append(sock)
        refused = raw_request(tight_vault.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert refused.startswith(b"HTTP/1.1 503 "), refused[:200]
        assert b"Retry-After: 1" in refused and body_of(refused) == {"error": BUSY}
        # The header timeout (2 s) closes the half-sent ones; then requests are served again.
        wait_until(lambda: httpx.get(f"{tight_vault.url}/healthz", timeout=5).status_code == 200,
                   timeout=15, what="the half-sent connections timed out")
    finally:
        for sock in held:
            sock.close()
    log = tight_vault.log_text()
    assert "refusing connections: 24 open (server.max_connections)" in log
    assert log.count("refusing connections") <= 3  # rate-limited, not one line per refusal
    assert "Traceback" not in log


def test_a_slow_but_steady_upload_outlasts_the_idle_timeout(
    tight_vault: VaultProcess, key: str
) -> None:
    data = docs.png_of_size(300_000)

    def trickle() -> Iterator[bytes]:
        for start in range(0, len(data), 30_000):  # 100 KB/s for 3 s, idle timeout 1.5 s
            yield data[start:start + 30_000]
            time.sleep(0.3)

    with tight_vault.client(key) as api:
        started = time.monotonic()
        response = api.post("/files", content=trickle(), headers={"Content-Type": "image/png"})
        assert response.status_code == 201, response.text
        assert time.monotonic() - started > 2.5
        assert response.json()["size"] == len(data)


def test_a_stalled_upload_is_cut_after_the_idle_timeout_and_leaves_nothing(
    tight_vault: VaultProcess, key: str
) -> None:
    blobs = tight_vault.data_dir / "blobs"
    before = set(blobs.iterdir()) if blobs.exists() else set()
    head = (f"POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: image/png\r\nContent-Length: 300000\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", tight_vault.port), timeout=10) as sock:
        sock.sendall(head + docs.png_of_size(300_000)[:100_000])
        started = time.monotonic()
        assert read_all(sock) == b""  # closed without an answer
        assert 1.0 < time.monotonic() - started < 6
    # No temporary or half-written blob once the handler has cleaned up.
    wait_until(lambda: set(blobs.iterdir()) == before, timeout=10, what="the blob removed")
    with tight_vault.client(key) as api:
        usage = api.get("/account").json()["usage"]
        assert (usage["documents"], usage["storageBytes"]) == (0, 0)
    assert "request body idle for 1.5 s: connection closed" in tight_vault.log_text()


def test_a_stalled_upload_leaves_no_request_behind_for_the_shutdown(tmp_path: Path) -> None:
    """Its request ends when the idle timeout closes the connection. Before, its coroutine
    stayed suspended (a handler and its request held per stalled upload) until the server
    stopped, which then logged a 500 for it."""
    with running_vault(tmp_path / "data", VAULTD_BODY_IDLE_TIMEOUT_SECONDS="1",
                       VAULTD_RENDER_WORKERS="1") as server:
        key = server.new_account()[1]
        head = (f"POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                "Content-Type: image/png\r\nContent-Length: 300000\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(head + docs.png_of_size(300_000)[:50_000])
            assert read_all(sock) == b""  # closed without an answer
    log = server.log_text()
    assert "request body idle for 1 s: connection closed" in log and "vaultd stopping" in log
    assert "POST /v1/files" not in log  # neither answered nor failed: the client had left


EMFILE_SERVER = """
import asyncio, resource, sys
from tornado.web import Application, RequestHandler
from vaultd.logs import setup_logging
from vaultd.web.server import ServerLimits, make_server
from tornado.netutil import bind_sockets

class Ok(RequestHandler):
    def get(self):
        self.write("ok")

async def main():
    setup_logging("INFO")
    server = make_server(Application([("/", Ok)]), ServerLimits(100000, 2.0, 2.0))
    sockets = bind_sockets(0, "127.0.0.1")
    port = sockets[0].getsockname()[1]
    server.add_sockets(sockets)
    import os
    used = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + 20, used + 20))
    print(port, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def test_at_the_descriptor_limit_connections_are_refused_with_one_log_line(
    tmp_path: Path,
) -> None:
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", EMFILE_SERVER], cwd=ROOT, env=base_env(),
                                stdout=subprocess.PIPE, stderr=log)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(200)]
        # The ones past the limit get an answer at once: wait until it has arrived.
        wait_until(lambda: len(select.select(held, [], [], 0)[0]) > 100, timeout=10,
                   what="answers to the refused connections")
        answers = []
        for sock in held:  # the ones past the limit were answered and closed at once
            sock.setblocking(False)
            try:
                answers.append(sock.recv(4096))
            except BlockingIOError:
                answers.append(None)
            sock.close()
        refused = [a for a in answers if a]
        assert len(refused) > 100 and answers.count(None) > 0
        assert all(a.startswith(b"HTTP/1.1 503 ") for a in refused)
        assert body_of(refused[0]) == {"error": BUSY}
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/", timeout=5).text == "ok",
                   timeout=10, what="the server answering again")
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()
    text = log_path.read_text()
    assert "refusing connections: out of file descriptors" in text
    assert text.count("refusing connections") <= 2 and "Traceback" not in text


def test_the_soft_open_file_limit_is_raised_to_the_hard_one_at_start(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))  # inherited by the vaultd below
    try:
        server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        assert server.process is not None
        limits = Path(f"/proc/{server.process.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        assert line.split()[3:5] == [str(hard), str(hard)]
    finally:
        server.stop()

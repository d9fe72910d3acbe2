"""The database gone or restarting: requests get a JSON 503 with Retry-After within 5 s (never a
500 or a hang); vaultd restarts a dead embedded database itself and service resumes; a database
unreachable at start is one line naming the setting. Real processes, real kills."""

from __future__ import annotations

import fcntl
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.database_processes import secantus
from tests.http_helpers import assert_json_error, create_link, upload, upload_ok
from tests.processes import database_process
from tests.vault_process import ROOT, VaultProcess, base_env, free_port, running_vault
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

DB_DOWN = "database unavailable; retry shortly"
ANSWER_SECONDS = 5.0


def assert_prompt_503(request: httpx.Request) -> None:
    started = time.monotonic()
    with httpx.Client(timeout=30) as client:
        response = client.send(request)
    took = time.monotonic() - started
    assert_json_error(response, 503, DB_DOWN)
    assert response.headers["Retry-After"] == "2"
    assert took < ANSWER_SECONDS, f"{request.url.path} answered after {took:.1f} s"


class StoreHeld:
    """Holds WiredTiger's lock on a store from the instant its server dies, so a new server
    cannot open it: an outage that lasts exactly as long as the test wants."""

    def __init__(self, storage: Path) -> None:
        self._file = open(storage / "WiredTiger.lock", "r+")  # noqa: SIM115
        self.taken = threading.Event()
        # Blocking: the kernel hands the lock to this waiter as the server dies, before any
        # new server exists to race for it.
        self._thread = threading.Thread(target=self._take, daemon=True)
        self._thread.start()

    def _take(self) -> None:
        fcntl.lockf(self._file, fcntl.LOCK_EX)
        self.taken.set()

    def release(self) -> None:
        self._file.close()


# The request's database deadline bounds how long it looks for a database that is gone (the
# driver's selection waits up to it): the default's 2 s, not the tests' 10 (TEST_DB_DEADLINE).
PROMPT = {"VAULTD_DB_DEADLINE_SECONDS": "2"}


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[VaultProcess]:
    with running_vault(tmp_path / "data", own_database=True, VAULTD_RENDER_WORKERS="1",
                       **PROMPT) as server:
        yield server


def test_a_killed_embedded_database_is_restarted_and_503_answers_the_outage(
        vault: VaultProcess) -> None:
    assert vault.process is not None
    _, key = vault.new_account()
    with vault.client(key) as api:
        kept = upload_ok(api, docs.pdf(pages=2), kind="delivery")
        token = create_link(api, kept["id"])["token"]
    # A SIGKILL loses what SecantusDB has not yet written to its journal (docs/architecture.md):
    # flush it, as the minimum of time would.
    vault.run_service(lambda db: db.client.admin.command("fsync"))
    database = database_process(vault.process.pid)
    assert database is not None
    held = StoreHeld(vault.data_dir / "db")
    subprocess.run(["kill", "-9", str(database)], check=True)
    try:
        assert held.taken.wait(10)
        auth = {"Authorization": f"Bearer {key}"}
        for method, path, body in [("GET", "/healthz", None), ("GET", "/v1/files", None),
                                   ("GET", f"/v1/views/{token}/pages/1", None),
                                   ("POST", "/v1/files", docs.pdf(pages=1))]:
            headers = {**auth, "Content-Type": "application/pdf"} if body else auth
            assert_prompt_503(httpx.Request(method, vault.url + path, headers=headers,
                                            content=body))
        wait_until(lambda: "embedded database did not restart" in vault.log_text(),
                   what="a failed restart logged")
    finally:
        held.release()
    wait_until(lambda: healthy(vault), timeout=30, what="service back")
    with vault.client(key) as api:  # uploads and pages work again, without a vaultd restart
        assert api.get(f"/files/{kept['id']}/download").status_code == 200
        assert upload_ok(api, docs.pdf(pages=1))["pageCount"] == 1
        page = api.get(f"/views/{token}/pages/2")
        assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"
    vault.new_account("Later Ltd")  # the new address is published for vault-admin too
    log = vault.log_text()
    assert f"embedded database (pid {database}) exited with code -9; restarting it" in log
    assert "Device or resource busy" in log and "Traceback" not in log


def healthy(vault: VaultProcess) -> bool:
    try:
        return httpx.get(f"{vault.url}/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def test_an_external_database_gone_is_a_prompt_503(tmp_path: Path) -> None:
    storage, port = tmp_path / "external" / "db", free_port()
    external = secantus(storage, tmp_path / "external.log", port=port, auth=False)
    wait_until(lambda: "listening" in (tmp_path / "external.log").read_text(),
               what="external database listening")
    uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
    try:
        with running_vault(tmp_path / "data", own_database=True, VAULTD_RENDER_WORKERS="1",
                           VAULTD_MONGODB_URI=uri, **PROMPT) as server:
            _, key = server.new_account()
            with server.client(key) as api:
                upload_ok(api, docs.pdf(pages=1))
            external.send_signal(signal.SIGTERM)
            external.wait(30)
            auth = {"Authorization": f"Bearer {key}"}
            assert_prompt_503(httpx.Request("GET", f"{server.url}/v1/files", headers=auth))
            assert_prompt_503(httpx.Request("GET", f"{server.url}/healthz"))
            with server.client(key) as api:
                assert_json_error(upload(api, docs.pdf(pages=1)), 503, DB_DOWN)
            code = server.stop()  # a clean stop, the database still gone
            assert code == 0, server.log_text()[-3000:]
        assert "Traceback" not in server.log_text()
    finally:
        external.kill()
        external.wait(10)


def test_a_database_unreachable_at_start_is_one_line_without_the_password(
        tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = vaultd_with_uri(tmp_path, f"mongodb://vault:s3cret-pw@{address}/?authSource=admin")
    assert time.monotonic() - started < 20
    assert result == [f"vaultd: cannot reach the database at mongodb://{address} (mongodb.uri / "
                      "VAULTD_MONGODB_URI): no answer within 2 s; is it running?"]


def test_a_malformed_database_uri_is_one_line_without_the_password(tmp_path: Path) -> None:
    assert vaultd_with_uri(tmp_path, "mongodb://vault:s3cret@pw@db.example:99999/") == [
        "vaultd: mongodb.uri / VAULTD_MONGODB_URI: not a usable MongoDB URI (InvalidURI) for "
        "mongodb://db.example:99999"]


def vaultd_with_uri(tmp_path: Path, uri: str) -> list[str]:
    """vaultd's error lines (exit 2 checked, no secret in any output)."""
    result = subprocess.run(
        [sys.executable, "-m", "vaultd.main", "--port", "0", "--data-dir", str(tmp_path / "d")],
        cwd=ROOT, env=base_env({"VAULTD_MONGODB_URI": uri, "VAULTD_RENDER_WORKERS": "1"}),
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result
    assert "s3cret" not in result.stderr + result.stdout
    return [line for line in result.stderr.splitlines() if "WARNING" not in line]

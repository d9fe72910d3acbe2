"""Faults injected into a running vaultd: killed workers, a killed server, a database that goes
away and comes back (a full disk: `test_disk_full.py`). Each leaves vaultd working and its
records exact."""

from __future__ import annotations

import os
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
from tests.access_log import page_entries
from tests.database_processes import wait_for_orphaned_database_to_exit
from tests.http_helpers import assert_json_error, create_link, upload, upload_ok
from tests.processes import render_workers
from tests.vault_process import VaultProcess, free_port, running_vault
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@pytest.fixture
def own_vault(tmp_path: Path) -> Iterator[VaultProcess]:
    with running_vault(tmp_path / "data", own_database=True, VAULTD_RENDER_WORKERS="1") as server:
        yield server


def test_a_worker_killed_mid_render_costs_one_request_not_the_server(
    own_vault: VaultProcess,
) -> None:
    _, key = own_vault.new_account()
    with own_vault.client(key) as api:
        slow = upload_ok(api, docs.slow_pdf())
        quick = upload_ok(api, docs.pdf())
        slow_link, quick_link = create_link(api, slow["id"]), create_link(api, quick["id"])
        own_vault.secrets += [slow_link["token"], quick_link["token"]]
        result: dict[str, httpx.Response] = {}
        thread = threading.Thread(
            target=lambda: result.setdefault("r", api.get(f"/views/{slow_link['token']}/pages/1"))
        )
        thread.start()
        # The page's log entry is written once its render is under way (services.pages.page_path).
        wait_until(lambda: page_entries(api, slow["id"]), what="the slow render under way")
        workers = render_workers(own_vault.process.pid)
        assert workers
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        thread.join(60)
        assert_json_error(result["r"], 503, "the page could not be rendered; retry later")
        assert result["r"].headers["retry-after"]
        assert api.get(f"/views/{quick_link['token']}/pages/1").status_code == 200
        assert httpx.get(f"{own_vault.url}/healthz").status_code == 200
        assert page_entries(api, slow["id"]) == []  # withdrawn: the page was not served


def test_a_hanging_render_is_killed_at_its_timeout_and_the_next_one_works(tmp_path: Path) -> None:
    # The files go in under the default timeout, which an upload's check in a worker shares: on
    # a loaded host the slow document's check alone outlasted 1 s ("the file takes too long to
    # process"). Then vaultd starts again with the pages' timeout at 1 s.
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    try:
        _, key = server.new_account()
        with server.client(key) as api:
            slow = create_link(api, upload_ok(api, docs.slow_pdf())["id"])
            quick = create_link(api, upload_ok(api, docs.pdf())["id"])
            server.secrets += [slow["token"], quick["token"]]
        server.stop()
        server.env["VAULTD_RENDER_TIMEOUT_SECONDS"] = "1"
        server.start()
        with server.client(key) as api:
            started = time.monotonic()
            assert_json_error(api.get(f"/views/{slow['token']}/pages/1"), 503,
                              "rendering timed out; retry later")
            assert time.monotonic() - started < 10
            assert api.get(f"/views/{quick['token']}/pages/1").status_code == 200
    finally:
        server.stop()


def test_a_full_render_queue_answers_503_with_retry_after(tmp_path: Path) -> None:
    server = VaultProcess(
        tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1", "VAULTD_RENDER_QUEUE_SIZE": "0"}
    ).start()
    try:
        _, key = server.new_account()
        with server.client(key) as api:
            slow_file = upload_ok(api, docs.slow_pdf())["id"]
            slow = create_link(api, slow_file)
            server.secrets.append(slow["token"])
            busy = threading.Thread(target=lambda: api.get(f"/views/{slow['token']}/pages/1"))
            busy.start()
            wait_until(lambda: page_entries(api, slow_file), what="the first render under way")
            response = api.get(f"/views/{slow['token']}/pages/1")
            assert_json_error(response, 503, "render queue is full; retry shortly")
            assert response.headers["retry-after"]
            busy.join(60)
    finally:
        server.stop()


def test_vaultd_killed_during_an_upload_restarts_with_exact_counters(
    own_vault: VaultProcess, tmp_path: Path
) -> None:
    account_id, key = own_vault.new_account()
    big = docs.pdf(pages=1500)
    with own_vault.client(key) as api:
        kept = upload_ok(api, docs.pdf())
        outcome: dict[str, object] = {}

        def send() -> None:
            try:
                outcome["r"] = upload(api, big)
            except httpx.HTTPError as exc:
                outcome["r"] = exc

        thread = threading.Thread(target=send)
        thread.start()

        async def reserved(db) -> bool:
            doc = await db.accounts.find_one({"_id": account_id})
            return bool(doc["pendingUploads"])

        wait_until(lambda: own_vault.run_service(reserved), timeout=60, interval=0.02)
        own_vault.stop(signal.SIGKILL)
        thread.join(30)
        assert isinstance(outcome["r"], httpx.HTTPError)
    wait_for_orphaned_database_to_exit(own_vault)
    own_vault.start()
    with own_vault.client(key) as api:
        files = api.get("/files").json()
        assert [f["id"] for f in files["files"]] == [kept["id"]]
        usage = api.get("/account").json()["usage"]
        assert (usage["documents"], usage["storageBytes"]) == (1, kept["size"])
    # The killed upload's temporary file may remain: it is younger than the age the start's
    # sweep removes (the next test), as another process's upload in progress would be.
    assert {p.name for p in (own_vault.data_dir / "blobs").iterdir()
            if not p.name.startswith(".tmp-")} == {kept["id"]}


def test_a_temp_file_left_by_a_killed_upload_is_cleaned_at_start(own_vault: VaultProcess) -> None:
    blobs = own_vault.data_dir / "blobs"
    leftover = blobs / ".tmp-0b3c2f9e-5d59-4a70-8d0e-7e7b7c0f3a55.deadbeef"
    leftover.write_bytes(b"\0" * 1000)
    old = time.time() - 600
    os.utime(leftover, (old, old))
    fresh = blobs / ".tmp-1b3c2f9e-5d59-4a70-8d0e-7e7b7c0f3a55.cafebabe"
    fresh.write_bytes(b"\0" * 10)
    own_vault.stop()
    own_vault.start()
    assert not leftover.exists()
    assert fresh.exists()  # maybe an upload of another process in progress: left alone


@pytest.fixture
def external_db(tmp_path: Path) -> Iterator[dict]:
    state = {"port": free_port(), "storage": tmp_path / "external-db", "process": None}

    def start() -> None:
        state["process"] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "secantus",
                "--host",
                "127.0.0.1",
                "--port",
                str(state["port"]),
                "--storage-path",
                str(state["storage"]),
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: _port_open(state["port"]), timeout=30)

    def stop() -> None:
        state["process"].terminate()
        state["process"].wait(30)

    state["start"], state["stop"] = start, stop
    start()
    yield state
    if state["process"].poll() is None:
        stop()


def _port_open(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_a_database_outage_is_a_json_503_and_vaultd_recovers_by_itself(
    tmp_path: Path, external_db: dict
) -> None:
    uri = f"mongodb://127.0.0.1:{external_db['port']}/?directConnection=true"
    server = VaultProcess(
        tmp_path / "data", env={"VAULTD_MONGODB_URI": uri, "VAULTD_RENDER_WORKERS": "1"}
    ).start()
    try:
        _, key = server.new_account()
        with server.client(key) as api:
            created = upload_ok(api, docs.pdf())
            external_db["stop"]()
            for response in (
                api.get("/files"),
                api.get(f"/files/{created['id']}"),
                upload(api, docs.pdf()),
                httpx.get(f"{server.url}/healthz", timeout=30),
            ):
                assert_json_error(response, 503, "database unavailable; retry shortly")
                assert response.headers["retry-after"]
            external_db["start"]()
            wait_until(lambda: healthy(server), timeout=60, interval=0.5)
            assert api.get(f"/files/{created['id']}").status_code == 200
            assert api.get("/files").json()["total"] == 1
    finally:
        server.stop()


def healthy(server: VaultProcess) -> bool:
    try:
        return httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200
    except httpx.HTTPError:
        return False

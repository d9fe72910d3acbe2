"""vaultd's own start and stop: the embedded database comes and goes with it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from pymongo.uri_parser import parse_uri

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.processes import alive, database_process, render_workers, running
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.embedded_db import running_address

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_vaultd_and_its_database_cleanly(tmp_path: Path, sig: int) -> None:
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    database = database_process(server.process.pid)
    assert database is not None and (server.data_dir / "db" / "address.json").exists()
    assert server.stop(sig) == 0
    assert not alive(database) or "zombie" in Path(f"/proc/{database}/status").read_text()
    assert not (server.data_dir / "db" / "address.json").exists()
    assert "Traceback" not in server.log_text()


def test_render_workers_and_the_database_go_when_vaultd_is_killed(tmp_path: Path) -> None:
    # Nothing stays behind rendering for nobody or holding the store: the kernel signals both.
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "2"}).start()
    workers = render_workers(server.process.pid)
    database = database_process(server.process.pid)
    assert len(workers) == 2 and database is not None
    server.stop(signal.SIGKILL)
    wait_until(lambda: not any(running(pid) for pid in [*workers, database]),
               what="workers and database gone")


def test_the_embedded_database_is_reached_without_retryable_writes(tmp_path: Path) -> None:
    # SecantusDB 0.7 scans its whole record of retryable writes on every write; a single local
    # node has nothing to retry across (vaultd.embedded_db.local_uri).
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    try:
        uri = running_address(server.data_dir / "db")
        assert uri is not None and parse_uri(uri)["options"]["retryWrites"] is False
        _, key = server.new_account()  # written through that URI
        with server.client(key) as api:
            assert upload_ok(api, docs.pdf(pages=1))["pageCount"] == 1
    finally:
        server.stop()


def test_files_and_keys_survive_a_restart(tmp_path: Path) -> None:
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    try:
        _, key = server.new_account()
        data = docs.pdf(pages=2)
        with server.client(key) as api:
            created = upload_ok(api, data, kind="delivery")
        server.stop()
        server.start()
        with server.client(key) as api:
            assert api.get(f"/files/{created['id']}/download").content == data
    finally:
        server.stop()
    assert (server.data_dir / "master.key").stat().st_mode & 0o777 == 0o600

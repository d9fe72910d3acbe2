"""Every database call of a request carries the request's deadline (`BaseHandler.db_deadline`,
sent as maxTimeMS): one that overruns is a JSON 503, logged with its route's template, and the
next request is served again. The overrun is the database's own `maxTimeAlwaysTimeOut`
failpoint (a SecantusDB started with test commands), which expires exactly the operations that
carry a time limit: calls without a deadline (vaultd's background work) run on.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from tests.http_helpers import assert_json_error
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.embedded_db import free_port

pytestmark = pytest.mark.slow  # starts a database and a vaultd


def _answers(uri: str) -> bool:
    with MongoClient(uri, serverSelectionTimeoutMS=300) as client:
        try:
            client.admin.command("ping")
            return True
        except Exception:
            return False


@pytest.fixture
def test_db(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    with (tmp_path / "db.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port", str(port),
             "--storage-path", str(tmp_path / "db"), "--log-level", "WARNING",
             "--enable-test-commands"], stdout=log, stderr=subprocess.STDOUT)
    uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
    try:
        wait_until(lambda: _answers(uri), timeout=30, what="the test database")
        yield uri
    finally:
        process.terminate()
        process.wait(15)


def _expire_timed_operations(uri: str, mode: Any) -> None:
    with MongoClient(uri) as client:
        client.admin.command({"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": mode})


def test_a_call_past_its_deadline_is_a_json_503_logged_with_its_route(
        tmp_path: Path, test_db: str) -> None:
    vault = VaultProcess(tmp_path / "data",
                         env={"VAULTD_MONGODB_URI": test_db, "VAULTD_RENDER_WORKERS": "1"})
    vault.start()
    try:
        _, key = vault.new_account()
        with vault.client(key) as api:
            assert api.get("/account").status_code == 200
            _expire_timed_operations(test_db, "alwaysOn")
            try:
                for path in ("/account", "/files"):
                    assert_json_error(api.get(path), 503, "database unavailable; retry shortly")
            finally:
                _expire_timed_operations(test_db, "off")
            assert api.get("/account").status_code == 200
        log = vault.log_text()
        assert "database deadline passed: GET /v1/account" in log
        assert "database deadline passed: GET /v1/files" in log
        assert "Traceback" not in log
    finally:
        vault.stop()


def test_the_deadline_is_the_setting(tmp_path: Path, test_db: str) -> None:
    """`server.db_deadline_seconds` is what a request's calls carry: at 7 s, the account's read
    is sent with a `maxTimeMS` over the default's 2,000 and at most 7,000 (the database's
    profile of the call)."""
    vault = VaultProcess(tmp_path / "data",
                         env={"VAULTD_MONGODB_URI": test_db, "VAULTD_RENDER_WORKERS": "1",
                              "VAULTD_DB_DEADLINE_SECONDS": "7"})
    vault.start()
    try:
        _, key = vault.new_account()
        with MongoClient(test_db) as client, vault.client(key) as api:
            database = client["vaultd"]
            database.command({"profile": 2, "slowms": 0})
            try:
                assert api.get("/account").status_code == 200
            finally:
                database.command({"profile": 0})
            sent = [entry["command"].get("maxTimeMS") for entry in database["system.profile"].find(
                {"ns": "vaultd.accounts"})]
        limits = [limit for limit in sent if limit is not None]
        assert limits and all(2000 < limit <= 7000 for limit in limits), sent
    finally:
        vault.stop()

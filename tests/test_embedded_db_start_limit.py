"""How long a start waits for the embedded database (`mongodb.embedded_start_seconds`): a
server slow to answer (a big store opening) is waited for up to the limit, one silent past it
is stopped and named with the limit, the setting and its log, and one that dies fails the start
at once with its exit status, however long the limit.

The server is started through `tests.slow_database`, a real process that sleeps (or exits)
before running the real `vaultd.secantus_server` in itself."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests import slow_database
from vaultd import embedded_db
from vaultd.config import load_settings
from vaultd.runtime import open_database

pytestmark = pytest.mark.slow  # starts its own database servers (see docs/testing.md)


@pytest.fixture
def wrapped(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(embedded_db, "SERVER_MODULE", slow_database.MODULE)
    return monkeypatch


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_server_slow_to_answer_is_waited_for_within_the_limit(
        tmp_path: Path, wrapped: pytest.MonkeyPatch) -> None:
    wrapped.setenv(slow_database.SECONDS, "3")
    started = time.monotonic()
    server = embedded_db.start(tmp_path / "db", record_address=False, start_seconds=60)
    try:
        assert time.monotonic() - started >= 3
        assert embedded_db.answering(server)
        assert server.start_seconds == 60
    finally:
        server.stop()
    assert server.process.returncode == 0


def test_a_server_silent_past_the_limit_is_stopped_and_named(
        tmp_path: Path, wrapped: pytest.MonkeyPatch) -> None:
    wrapped.setenv(slow_database.SECONDS, "600")
    storage = tmp_path / "db"
    started = time.monotonic()
    with pytest.raises(embedded_db.EmbeddedDbError) as refused:
        embedded_db.start(storage, record_address=False, start_seconds=1.5)
    assert time.monotonic() - started < 30  # the limit, not the 600 s it would have taken
    assert str(refused.value) == (
        f"embedded database in {storage} did not start within 1.5 s "
        "(mongodb.embedded_start_seconds / VAULTD_EMBEDDED_DB_START_SECONDS); "
        f"see {tmp_path / 'secantus.log'}")
    assert _gone(int((storage / slow_database.PID_FILE).read_text()))


def test_a_server_that_dies_fails_the_start_at_once_with_its_status(
        tmp_path: Path, wrapped: pytest.MonkeyPatch) -> None:
    wrapped.setenv(slow_database.SECONDS, "0.5")
    wrapped.setenv(slow_database.EXIT, "3")
    wrapped.setenv(slow_database.WORDS, "WiredTigerError: the store is damaged")
    storage = tmp_path / "db"
    started = time.monotonic()
    with pytest.raises(embedded_db.EmbeddedDbError) as refused:
        embedded_db.start(storage, record_address=False, start_seconds=600)
    assert time.monotonic() - started < 60  # at once, not after the 600 s limit
    assert str(refused.value) == (
        f"embedded database in {storage} exited with code 3: WiredTigerError: the store is "
        f"damaged (see {tmp_path / 'secantus.log'})")


async def test_vaultd_waits_as_long_as_its_setting_says(
        tmp_path: Path, wrapped: pytest.MonkeyPatch) -> None:
    wrapped.setenv(slow_database.SECONDS, "600")
    settings = load_settings({"mongodb.embedded_start_seconds": 2},
                             env={"VAULTD_DATA_DIR": str(tmp_path)})
    with pytest.raises(embedded_db.EmbeddedDbError, match=(
            r"did not start within 2 s \(mongodb\.embedded_start_seconds / "
            r"VAULTD_EMBEDDED_DB_START_SECONDS\)")):
        await open_database(settings)
    wrapped.setenv(slow_database.SECONDS, "2")
    settings = load_settings({}, env={"VAULTD_DATA_DIR": str(tmp_path),
                                      "VAULTD_EMBEDDED_DB_START_SECONDS": "90"})
    database = await open_database(settings)
    try:
        assert database.server is not None and database.server.start_seconds == 90
        assert (await database.db.client.admin.command("ping"))["ok"] == 1.0
    finally:
        await database.close()

"""The embedded database's stop (vaultd.embedded_db.EmbeddedServer.stop): SecantusDB closes its
store on SIGTERM each time, rather than waiting for the SIGKILL of the timeout, and without the
2 s its accept thread's join takes when nothing wakes it. Each test starts real servers on a
fresh store, the first start creating the user and restarting the server as vaultd's does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from vaultd import embedded_db

pytestmark = pytest.mark.slow  # starts its own database servers (see docs/testing.md)

STOPS = 8
ACCEPT_JOIN_SECONDS = 2.0  # SecantusDB's join of its accept thread when nothing wakes it


def _write_and_stop(storage: Path, marker: int) -> tuple[float, int | None]:
    server = embedded_db.start(storage, record_address=False)
    client: MongoClient[dict[str, Any]] = MongoClient(server.uri)
    try:
        client.vaultd.stops.insert_one({"_id": marker})
    finally:
        client.close()
    started = time.monotonic()
    server.stop()
    return time.monotonic() - started, server.process.returncode


def test_every_stop_closes_the_store_on_sigterm_and_keeps_what_was_written(
        tmp_path: Path) -> None:
    storage = tmp_path / "data" / "db"
    outcomes = [_write_and_stop(storage, 0)]
    for _ in range(STOPS - 1):  # as vaultd's first start stops the server it made its user on
        server = embedded_db.start(storage, record_address=False)
        started = time.monotonic()
        server.stop()
        outcomes.append((time.monotonic() - started, server.process.returncode))
    # 0 is SecantusDB's own exit on SIGTERM; -9 the SIGKILL of a stop that waited it out.
    assert [code for _, code in outcomes] == [0] * STOPS, outcomes
    server = embedded_db.start(storage, record_address=False)
    client: MongoClient[dict[str, Any]] = MongoClient(server.uri)
    try:
        assert list(client.vaultd.stops.find()) == [{"_id": 0}]
    finally:
        client.close()
        server.stop()


def test_a_stop_does_not_wait_out_the_accept_threads_join(tmp_path: Path) -> None:
    # A stop that leaves the accept thread blocked waits the join's full 2 s every time: the
    # quickest of several is under it only when the thread was woken.
    seconds = [_write_and_stop(tmp_path / "data" / "db", n)[0] for n in range(3)]
    assert min(seconds) < ACCEPT_JOIN_SECONDS, seconds

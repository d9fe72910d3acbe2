"""Every database call of a request carries the request's deadline (`BaseHandler.db_deadline`,
sent as maxTimeMS): one that overruns is a JSON 503, logged with its route's template, and the
next request is served again. The overrun is the database's own `maxTimeAlwaysTimeOut`
failpoint (a SecantusDB started with test commands), which expires exactly the operations that
carry a time limit: calls without a deadline (vaultd's background work) run on.

A write is another matter (`vaultd.db_deadline`): the database makes it even when the client
stopped waiting, so once sent it is waited for past the deadline, and an error after it says the
change may have been made. The database's `failCommand` failpoint holds vaultd's inserts (its
`appName`) for longer than the deadline, as a queue behind another tenant's work would.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from tests.http_helpers import assert_json_error
from tests.inprocess import InProcessVault
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.db import connect
from vaultd.db_deadline import UnsentWrite, request_deadline, wrote_in_request
from vaultd.embedded_db import free_port
from vaultd.services.common import background

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


UNCONFIRMED = ("the database did not confirm the change in time; it may have been made: "
               "read it back before sending it again")


def _hold_inserts(uri: str, milliseconds: int | None) -> None:
    """vaultd's inserts wait `milliseconds` in the database, then are made (None: no longer)."""
    with MongoClient(uri) as client:
        client.admin.command({
            "configureFailPoint": "failCommand", "mode": "off" if milliseconds is None else
            "alwaysOn", "data": {"failCommands": ["insert"], "blockConnection": True,
                                 "blockTimeMS": milliseconds or 0, "appName": "vaultd"}})


def _rooms(api: Any) -> list[str]:
    listed = api.get("/rooms")
    assert listed.status_code == 200, listed.text
    return [room["name"] for room in listed.json()["rooms"]]


def test_a_write_that_outlasts_the_deadline_is_waited_for_and_answered_made(
        tmp_path: Path, test_db: str) -> None:
    """At a 1 s deadline, a room whose insert the database holds 2.5 s is answered 201, once
    made. Without the rule the request was answered 503 "retry shortly" at 1 s, and the room
    was made all the same: a client that retried had two."""
    vault = InProcessVault(tmp_path / "data", env={
        "VAULTD_MONGODB_URI": test_db, "VAULTD_RENDER_WORKERS": "1",
        "VAULTD_DB_DEADLINE_SECONDS": "1"}).start()
    try:
        _, key = vault.new_account()
        with vault.client(key) as api:
            _hold_inserts(test_db, 2500)
            try:
                began = time.monotonic()
                created = api.post("/rooms", json={"name": "Held room"})
                took = time.monotonic() - began
            finally:
                _hold_inserts(test_db, None)
            assert created.status_code == 201, created.text
            assert took >= 2.5, took
            assert _rooms(api) == ["Held room"]
    finally:
        vault.stop()


def test_a_write_the_database_does_not_confirm_says_it_may_have_been_made(
        tmp_path: Path, test_db: str) -> None:
    """A write is waited for as long as the client's `socketTimeoutMS` (here 1 s, from the URI)
    allows. Held 2.5 s it is not confirmed, and the answer (504, no Retry-After) says the change
    may have been made, not "retry", which it was: the room is listed once the database is
    free."""
    vault = InProcessVault(tmp_path / "data", env={
        "VAULTD_MONGODB_URI": f"{test_db}&socketTimeoutMS=1000", "VAULTD_RENDER_WORKERS": "1"})
    vault.start()
    try:
        _, key = vault.new_account()
        with vault.client(key) as api:
            _hold_inserts(test_db, 2500)
            try:
                unconfirmed = api.post("/rooms", json={"name": "Unconfirmed room"})
            finally:
                _hold_inserts(test_db, None)
            assert_json_error(unconfirmed, 504, UNCONFIRMED)
            assert "retry-after" not in unconfirmed.headers
            wait_until(lambda: _rooms(api) == ["Unconfirmed room"], timeout=10,
                       what="the unconfirmed room, made after all")
        log = vault.log_text()
        assert "database did not confirm a change: POST /v1/rooms" in log
        assert "database deadline passed" not in log and "Traceback" not in log
    finally:
        vault.stop()


def test_a_write_is_not_sent_once_the_deadline_has_passed(test_db: str) -> None:
    """Past the deadline a request's write fails before it is sent (nothing is made), as its
    reads do: such a request is truly answered "retry shortly"."""

    async def late_write() -> int:
        db = connect(test_db, "late_write")
        try:
            with request_deadline(0.5):
                await asyncio.sleep(0.6)
                with pytest.raises(UnsentWrite, match="deadline passed before its write"):
                    await db.rooms.insert_one({"_id": "late", "name": "late"})  # type: ignore[typeddict-item]
            return await db.rooms.count_documents({})
        finally:
            await db.client.drop_database("late_write")
            await db.close()

    assert asyncio.run(late_write()) == 0


def test_work_a_request_leaves_running_is_not_held_to_its_deadline(test_db: str) -> None:
    """A revoke-all's marking, a sign-in mail's record: work a request starts and does not wait
    for writes after the request's deadline, and its writes are not the request's."""

    async def write_after_the_request() -> tuple[bool, int]:
        db = connect(test_db, "spawned_write")

        async def later() -> None:
            await asyncio.sleep(0.7)
            await db.rooms.insert_one({"_id": "later", "name": "later"})  # type: ignore[typeddict-item]

        try:
            with request_deadline(0.5):
                background.spawn(later(), "a write after its request's deadline")
                await asyncio.sleep(0.9)  # the request still open, its deadline passed
                request_wrote = wrote_in_request()
            await background.settled()
            return request_wrote, await db.rooms.count_documents({})
        finally:
            await db.client.drop_database("spawned_write")
            await db.close()

    assert asyncio.run(write_after_the_request()) == (False, 1)


def test_after_its_first_write_the_rest_of_a_request_is_not_cut(test_db: str) -> None:
    """A write held 1.5 s past a 0.5 s deadline, then a read and a second write: both made, as
    the request's write committed it to its course (the read alone failed before)."""

    async def write_then_read() -> tuple[dict[str, Any] | None, int]:
        db = connect(test_db, "write_then_read")
        try:
            _hold_inserts(test_db, 1500)
            try:
                with request_deadline(0.5):
                    await db.rooms.insert_one({"_id": "first", "name": "first"})  # type: ignore[typeddict-item]
                    found = await db.rooms.find_one({"_id": "first"})
                    await db.rooms.update_one({"_id": "first"}, {"$set": {"name": "second"}})
            finally:
                _hold_inserts(test_db, None)
            return found, await db.rooms.count_documents({"name": "second"})
        finally:
            await db.client.drop_database("write_then_read")
            await db.close()

    found, renamed = asyncio.run(write_then_read())
    assert found == {"_id": "first", "name": "first"} and renamed == 1

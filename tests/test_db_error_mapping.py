"""Which database errors a request answers 503 (retry) rather than 500, and 504 once it has
sent a write: the one mapper, `vaultd.web.base.as_vault_error`, in process; and vault-admin's
line for a database error."""

from __future__ import annotations

import asyncio

import pytest
from pymongo import _csot
from pymongo.errors import (
    AutoReconnect,
    InvalidOperation,
    NetworkTimeout,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
    _OperationCancelled,
)

from vaultd.db import connect, describe_failure
from vaultd.db_deadline import request_deadline, wrote_in_request
from vaultd.embedded_db import free_port
from vaultd.errors import ServiceUnavailable, Unconfirmed
from vaultd.web.base import as_vault_error


@pytest.mark.parametrize("error", [
    ServerSelectionTimeoutError("no servers"),
    AutoReconnect("connection closed"),
    OperationFailure("interrupted at shutdown", code=11600),
    OperationFailure("shutdown in progress", code=91),
    OperationFailure("not primary", code=10107),
], ids=["selection-timeout", "connection-lost", "interrupted-at-shutdown",
        "shutdown-in-progress", "not-primary"])
def test_a_database_going_away_is_a_503_to_retry(error: Exception) -> None:
    mapped = as_vault_error(error)
    assert isinstance(mapped, ServiceUnavailable)
    assert (mapped.message, mapped.retry_after) == ("database unavailable; retry shortly", 2)


def test_other_database_errors_are_not_called_an_outage() -> None:
    assert as_vault_error(OperationFailure("E11000 duplicate key", code=11000)) is None


@pytest.mark.parametrize("error", [
    NetworkTimeout("timed out"),
    AutoReconnect("connection closed"),
    ServerSelectionTimeoutError("no servers"),
], ids=["unanswered", "connection-lost", "gone-before-the-next-call"])
def test_the_same_after_a_write_was_sent_is_a_504_saying_it_may_have_been_made(
        error: Exception) -> None:
    """Once a request sent a write (vaultd.db_deadline), the database may have made it: the
    answer is not "retry" but "read it back first", with a status a program can tell apart."""
    mapped = as_vault_error(error, after_write=True)
    assert isinstance(mapped, Unconfirmed) and not isinstance(mapped, ServiceUnavailable)
    assert (mapped.status, mapped.message) == (504, (
        "the database did not confirm the change in time; it may have been made: read it "
        "back before sending it again"))


def test_a_refusal_after_a_write_is_still_not_called_an_outage() -> None:
    assert as_vault_error(OperationFailure("E11000 duplicate key", code=11000),
                          after_write=True) is None


@pytest.mark.parametrize(("error", "line"), [
    (_OperationCancelled("operation cancelled"),
     "the connection to the database was lost or refused"),
    (NetworkTimeout("timed out"),
     "the database did not answer in time"),
    (OperationFailure("not authorized on vaultd", code=13),
     "the database refused an operation (code 13)"),
    (InvalidOperation("cannot use a closed client"), "database error: InvalidOperation"),
], ids=["cancelled", "timeout", "refused", "other"])
def test_vault_admin_says_what_the_database_did_in_words(error: PyMongoError,
                                                         line: str) -> None:
    """vault-admin's one line: never a private class of the driver's (`_OperationCancelled`, seen
    in a restore) nor its text, which names hosts."""
    assert describe_failure(error) == line


def test_a_first_write_that_finds_no_database_was_not_sent() -> None:
    """A write whose server selection fails never left vaultd: the request may still be told
    "retry" (503), not "it may have been made", and the rest of it keeps its deadline (the
    write lifted it only because it would have been sent)."""

    async def write_to_nowhere() -> tuple[bool, float | None]:
        db = connect(f"mongodb://127.0.0.1:{free_port()}/?directConnection=true", "nowhere",
                     timeout_ms=300)
        try:
            with request_deadline(30):
                with pytest.raises(ServerSelectionTimeoutError):
                    await db.rooms.insert_one({"_id": "r", "name": "r"})  # type: ignore[typeddict-item]
                return wrote_in_request(), _csot.remaining()
        finally:
            await db.close()

    wrote, remaining = asyncio.run(write_to_nowhere())
    assert wrote is False
    assert remaining is not None and 0 < remaining <= 30, remaining

"""Which database errors a request answers 503 (retry) rather than 500: the one mapper,
`vaultd.web.base.as_vault_error`, in process."""

from __future__ import annotations

import pytest
from pymongo.errors import AutoReconnect, OperationFailure, ServerSelectionTimeoutError

from vaultd.errors import ServiceUnavailable
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

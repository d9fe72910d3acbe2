"""The access log's numbering knobs at a tenth, for the numbering tests whose logs are a tenth
of their old sizes too (`tests/test_access_log_numbers.py`,
`tests/test_access_log_action_numbers.py`, `tests/test_access_log_older_numbers.py`): a round's
cap (`log_numbering.MAX_PER_ROUND`, 500), the page (`access_log.LATEST`, 200) and the window a
time read re-reads sorted past (`newest.SPILL_FLOOR`, 256, beside four times the page), all
read at the call. Every bound of those tests stays the same multiple of a round and of a page,
and a log read by time instead of by number still walks several times a page's bound."""

from __future__ import annotations

import pytest

from vaultd.services.common import access_log, log_numbering, newest


@pytest.fixture
def tenth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_numbering, "MAX_PER_ROUND", log_numbering.MAX_PER_ROUND // 10)
    monkeypatch.setattr(access_log, "LATEST", access_log.LATEST // 10)
    monkeypatch.setattr(newest, "SPILL_FLOOR", newest.SPILL_FLOOR // 10)

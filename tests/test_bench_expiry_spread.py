"""`bench.expiry_spread` times what it says: the account's links, one on each file, are counted
live and then expired when it reads them, a count after its sweep reads the account's record
alone, and the expired links' files are read a few at a time. On a fresh embedded database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import expiry_spread
from vaultd.services.accounts import link_counts

pytestmark = pytest.mark.slow  # an embedded database of its own

FILES = 30


def test_the_spread_reads_every_link_live_then_expired(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link_counts, "OWNERS_PER_READ", 8)  # 30 files: four reads of them
    times, done = asyncio.run(expiry_spread.run(FILES, tmp_path / "db"))
    answers = {label: answer for label, _, answer in done}
    assert answers == {"count after the links were made": FILES, "count again": FILES,
                       "count after the expiry": 0, "count after the expiry, again": 0}
    assert set(times) == set(answers)  # every read's operations timed, under its own label
    assert len(times["count again"]) == len(times["count after the expiry, again"]) == 1
    # The sweep after the expiry: the account, two probes and a range of the links and the same
    # of the room links, 4 reads of files, the write.
    assert len(times["count after the expiry"]) == 12, times["count after the expiry"]
    assert "| count after the expiry | 0 |" in expiry_spread.table(times, done)

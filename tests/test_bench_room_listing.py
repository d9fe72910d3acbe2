"""`bench.room_listing` times what it says: each listing returns a full page, the reference and
page 1 of many rooms read the account and one range of numbers, the pruned account's ranges
widen across its gaps, and the table reports every listing. On a fresh embedded database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import room_listing

pytestmark = pytest.mark.slow  # an embedded database of its own

ROOMS, SAMPLES = 1_100, 3  # page 40 of 25 needs 1,000


def test_the_bench_lists_each_account_and_counts_its_operations(tmp_path: Path) -> None:
    listings, times = asyncio.run(room_listing.run(ROOMS, SAMPLES, tmp_path / "db"))
    assert [listing.returned for listing in listings] == [room_listing.PER_PAGE] * 4
    assert all(len(listing.seconds) == SAMPLES for listing in listings)
    operations = {listing.label: len(times[listing.label]) / SAMPLES for listing in listings}
    reference, many, pruned, deep = (listing.label for listing in listings)
    assert operations[reference] == operations[many] == 2  # the account, then one range
    assert operations[pruned] > 2  # ranges widened across the deleted rooms' numbers
    assert operations[deep] > 2  # page 40 reads the 975 rooms before it, 201 a range at most
    table = room_listing.table(listings, times, SAMPLES)
    assert f"| {ROOMS:,} rooms, nine in ten deleted, page 1 |" in table
    assert table.count("\n") == 1 + len(listings)

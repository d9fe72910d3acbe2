"""`bench.expiry_burst` times what it says: its burst's links have expired when it reads them
(its counts and pages answer so), its reference file has one expired link, and each read's
operations are the ones timed under its label. On a fresh embedded database, as the bench."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import expiry_burst

pytestmark = pytest.mark.slow  # an embedded database of its own

LINKS = 30


@pytest.mark.parametrize(("shards", "bulk"), [(256, False), (256, True), (32, True)],
                         ids=["made through the service", "written in bulk", "files of 32"])
def test_the_burst_reads_its_expired_links_and_the_reference_one(
        tmp_path: Path, shards: int, bulk: bool) -> None:
    """Links written in bulk answer as those made through the service (`--bulk`)."""
    times, done = asyncio.run(expiry_burst.run(LINKS, tmp_path / "db", shards, bulk))
    answers = {label: answer for label, _, answer in done}
    assert answers == {
        "reference: count after the links were made": LINKS,
        "burst: count after the links were made": LINKS,
        "account: count after the expiry": LINKS - 1,
        "reference: count after the expiry": LINKS - 1,
        "reference: count again": LINKS - 1,
        "reference: expired page": "1 of 1",
        "reference: expired page again": "1 of 1",
        "burst: count after the expiry": 0,
        "burst: count again": 0,
        "burst: expired page": f"20 of {LINKS}",
        "burst: expired page again": f"20 of {LINKS}",
    }
    assert set(times) == set(answers)  # every read's operations timed, under its own label
    # A count after its sweep reads no link: the file's record alone.
    assert len(times["burst: count again"]) == len(times["reference: count again"]) == 1
    table = expiry_burst.table(times, done)
    assert f"| burst: expired page | 20 of {LINKS} |" in table

"""`bench.log_export` times what it says: the export and the one `find` it replaced each write
the whole log, unnumbered and numbered, the export in many short reads and the `find` in one
(and the batches it streams). On a fresh embedded database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import log_export
from vaultd.services.common import feed

pytestmark = pytest.mark.slow  # an embedded database of its own

ENTRIES = 2_000


def test_the_bench_exports_the_whole_log_both_ways(tmp_path: Path) -> None:
    done, times = asyncio.run(log_export.run(ENTRIES, tmp_path / "db"))
    assert [written for _, _, written in done] == [ENTRIES] * 4
    operations = {label: len(times[label]) for label, _, _ in done}
    for state in ("unnumbered", "numbered"):
        # Pages of EXPORT_PAGE: at least one read each; the find: its first batch and getMores.
        assert operations[f"{state}: the export, a page at a time"] >= ENTRIES / feed.EXPORT_PAGE
        assert operations[f"{state}: one find, sorted (before)"] <= 3
    table = log_export.table(times, done)
    assert f"| numbered: the export, a page at a time | {ENTRIES} |" in table

"""The fast loop's selection (`-m "not slow"`, docs/testing.md "Markers"): a `forensic` module's
tests count as slow, so the fast loop collects none of them and `-m forensic` collects them
alone; the rest of the fast loop is left as it was."""

from __future__ import annotations

import pytest

from tests.collect_only import collected_modules

FORENSIC = "tests/test_forensic_codes.py"  # marked forensic, and nothing else
PLAIN = "tests/test_keyring.py"  # in the fast loop

pytestmark = pytest.mark.slow  # a pytest collection per selection: seconds each


def collected(marks: str) -> set[str]:
    return set(collected_modules(marks, FORENSIC, PLAIN))


def test_the_fast_loop_leaves_the_forensic_modules_to_the_whole_suite() -> None:
    assert collected("not slow") == {PLAIN}
    assert collected("forensic and slow") == {FORENSIC}  # alone, and in the whole suite

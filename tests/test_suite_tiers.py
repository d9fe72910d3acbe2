"""The suite's selections. CI's run and the long tier (tests/suite_tiers.py, docs/testing.md
"Tiers"): a `long` module is collected by `-m long` and by nothing that leaves it out (`not
long`, the fast loop's `not slow`); the costliest modules are collected first; every module the
tiers name exists, and each long module's small sibling is in CI's run. The fast loop
(`-m "not slow"`, "Markers"): a `forensic` module's tests count as slow, so the fast loop
collects none of them and `-m "forensic and slow"` collects them alone. Every test has an id of
its own, which pytest-xdist needs to run it; a module of slow tests only that is costly to
collect (`SLOW_ONLY`) is collected only by a selection that keeps its tests."""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.collect_only import collected_ids, collected_modules, imported_files
from tests.suite_tiers import HEAVIEST_FIRST, LONG, SLOW_ONLY, deselects_slow_only
from tests.zygote_base import ROOT

LONG_ONE = "tests/test_bench_settle.py"
HEAVY = "tests/test_webhooks_durability.py"  # in HEAVIEST_FIRST, after test_keyring.py by name
PLAIN = "tests/test_keyring.py"
FORENSIC = "tests/test_forensic_codes.py"  # marked forensic, and nothing else
FUZZING = "tests/test_openapi_fuzzing.py"  # SLOW_ONLY
SELECTIONS = ["not long", "long", "not slow", "forensic and slow"]

pytestmark = pytest.mark.slow  # pytest collections in a process of their own: seconds


@cache
def _selected() -> dict[str, list[str]]:
    return collected_modules(SELECTIONS, PLAIN, LONG_ONE, HEAVY, FORENSIC)


def collected(marks: str) -> list[str]:
    """The modules collected under `marks`, in collection order."""
    return _selected()[marks]


def test_ci_leaves_the_long_tier_out_and_starts_with_the_costliest() -> None:
    assert collected("not long") == [HEAVY, PLAIN, FORENSIC]  # the others in their order
    assert collected("long") == [LONG_ONE]
    assert LONG_ONE not in collected("not slow")


def test_the_fast_loop_leaves_the_forensic_modules_to_the_whole_suite() -> None:
    assert collected("not slow") == [PLAIN]
    assert collected("forensic and slow") == [FORENSIC]  # alone, and in the whole suite


def test_every_module_the_tiers_name_exists_and_none_is_in_both() -> None:
    named = [*LONG, *HEAVIEST_FIRST]
    assert [module for module in named if not (ROOT / module).is_file()] == []
    assert set(LONG).isdisjoint(HEAVIEST_FIRST)
    assert len(set(HEAVIEST_FIRST)) == len(HEAVIEST_FIRST)


def test_each_long_modules_small_siblings_run_in_ci() -> None:
    """The landing modules a long one names as checking its logic small exist and are not long
    themselves."""
    for module, why in LONG.items():
        siblings = [f"tests/{name}.py" for name in re.findall(r"test_\w+", why.split("small:")[-1])]
        assert [one for one in siblings if one in LONG or not (ROOT / one).is_file()] == [], module


def test_each_route_s_contract_test_has_an_id_of_its_own() -> None:
    # pytest-xdist hands tests out by node id: 70 tests under one id ran as one (tests/conftest.py)
    ids = collected_ids("not long", FUZZING)
    assert len(ids) >= 70 and len(set(ids)) == len(ids)
    assert f"{FUZZING}::test_the_api_honours_its_contract[GET /files]" in ids


def test_a_slow_only_module_is_collected_only_where_its_tests_are_selected() -> None:
    fast_loop = imported_files("not slow", "tests")
    ci = imported_files("not long and not alone", "tests")
    assert FORENSIC in fast_loop  # a slow module is collected, then deselected
    for module in SLOW_ONLY:
        assert module not in fast_loop and module in ci
        # every test of it is slow: a selection that keeps slow tests keeps all of its tests
        assert collected_ids("slow", module) == collected_ids("slow or not slow", module)
    assert [deselects_slow_only(marks) for marks in (
        "not slow", "forensic", "not long and not alone", "slow", "", "not (slow or long)")] == [
        True, True, False, False, False, True]

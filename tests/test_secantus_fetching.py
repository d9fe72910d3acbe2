"""The embedded database as vaultd starts it walks index ranges and fetches their documents from
raw bytes (`vaultd.secantus_fetching`): the same RecordIds and documents, in the same order, as
SecantusDB's own methods give, on a store of random documents (strings with NULs, numbers of
every width, dates, arrays that make an index multikey, missing fields) under single and
compound indexes.

The walks' arguments are those SecantusDB's planner passes for many filters (recorded around
its own methods), then the same bounds recombined: every pair of recorded keys as a range, with
each inclusivity and with and without a prefix. SecantusDB's methods are the oracle; both run
on one `secantus.storage.Storage` in this process.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from bson.int64 import Int64
from secantus import storage

from vaultd import secantus_fetching

DB, COLL = "vaultd", "entries"
# `by_n` and `by_n_down`: a walk that runs off an index's end meets one whose name extends it.
INDEXES = {"by_n": {"n": 1}, "by_n_down": {"n": -1}, "by_kind_n": {"kind": 1, "n": 1},
           "by_at": {"at": 1}, "by_tags": {"tags": 1}, "by_kind_at": {"kind": 1, "at": -1}}
KINDS = ["a", "b", "a\x00b", "", "é", "a\x00"]  # a NUL inside a key: escaped in the entry


def _document(rng: random.Random, number: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"_id": f"d{number:05d}", "kind": rng.choice(KINDS),
                           "at": datetime(2026, 1, 1, tzinfo=UTC)
                           + timedelta(milliseconds=rng.randrange(10**9))}
    choice = rng.randrange(6)
    # Few small integers: many entries equal a bound.
    doc["n"] = [rng.randrange(-30, 30), Int64(rng.randrange(-2**40, 2**40)),
                rng.random() * 100, -(2**31) - rng.randrange(5), None, "7"][choice]
    if rng.random() < 0.3:
        doc["tags"] = rng.sample(KINDS, rng.randrange(0, 4))  # multikey, sometimes empty
    if rng.random() < 0.1:
        del doc["n"]
    return doc


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[storage.Storage]:
    path: Path = tmp_path_factory.mktemp("fetching")
    engine = storage.Storage(str(path), enable_oplog=False)
    rng = random.Random(20261201)
    engine.insert(DB, COLL, [_document(rng, n) for n in range(1500)])
    for name, spec in INDEXES.items():
        engine.create_index(DB, COLL, name, spec)
    # Removed documents leave RecordIds the fetch finds nothing for.
    for doc in engine.find_matching(DB, COLL, {"kind": "b"})[::3]:
        engine.delete_matching(DB, COLL, {"_id": doc["_id"]})
    yield engine
    engine.close()


FILTERS: list[dict[str, Any]] = [
    {"n": {"$gte": -5, "$lt": 12}}, {"n": {"$gt": 5}}, {"n": {"$lte": 0}}, {"n": 7},
    {"n": {"$in": [1, 2, 3, 25]}}, {"kind": "a", "n": {"$gt": -10, "$lte": 20}},
    {"kind": "a\x00b", "n": {"$gte": 0}}, {"kind": "", "n": {"$lt": 0}}, {"kind": "é"},
    {"at": {"$gt": datetime(2026, 1, 3, tzinfo=UTC), "$lte": datetime(2026, 1, 8, tzinfo=UTC)}},
    {"kind": "b", "at": {"$lt": datetime(2026, 1, 6, tzinfo=UTC)}}, {"tags": "a"},
    {"tags": {"$in": ["a\x00", ""]}}, {"kind": {"$in": ["a", "b"]}, "n": {"$gt": 3}},
    {"n": {"$gte": Int64(2**35)}}, {"n": {"$lt": 50.5, "$gt": 49.5}}, {"n": None},
]


@contextmanager
def _recorded(name: str) -> Iterator[list[tuple[tuple[Any, ...], dict[str, Any]]]]:
    """The arguments SecantusDB's planner passes to its method `name` meanwhile."""
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    original: Callable[..., Any] = getattr(storage.Storage, name)

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return original(self, *args, **kwargs)

    setattr(storage.Storage, name, recording)
    try:
        yield calls
    finally:
        setattr(storage.Storage, name, original)


def _planned(store: storage.Storage, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    with _recorded(name) as calls:
        for query in FILTERS:
            store.find_matching(DB, COLL, query)
    return calls


def _same(store: storage.Storage, name: str, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> list[int]:
    expected = secantus_fetching._ORIGINALS[name](store, *args, **kwargs)
    assert getattr(secantus_fetching, name.lstrip("_"))(store, *args, **kwargs) == expected, (
        name, args, kwargs)
    return list(expected)


def test_the_methods_mirrored_are_the_installed_secantus_own() -> None:
    """A SecantusDB whose methods changed is left as it is (`install`): this test then fails,
    so the mirror is brought up to date rather than silently no longer used."""
    assert secantus_fetching.mirrored()


def test_ranges_walk_the_same_entries_as_secantus(store: storage.Storage) -> None:
    calls = _planned(store, "_range_scan_index")
    assert len(calls) >= 8, calls  # the planner walks ranges for most of FILTERS
    walked = [_same(store, "_range_scan_index", args, kwargs) for args, kwargs in calls]
    assert sum(map(len, walked)) > 500
    # Every pair of the bounds seen on each index, with each inclusivity and prefix.
    by_index: dict[str, set[bytes]] = {}
    prefixes: dict[str, set[bytes | None]] = {}
    for args, kwargs in calls:
        name, lower, _, upper, _ = args[2:7]
        by_index.setdefault(name, set()).update(b for b in (lower, upper) if b is not None)
        prefixes.setdefault(name, {None}).add(kwargs.get("prefix"))
    rng = random.Random(7)
    checked = 0
    for name, bounds in by_index.items():
        keys = sorted(bounds)
        for _ in range(60):
            lower, upper = rng.choice([None, *keys]), rng.choice([None, *keys])
            for prefix in prefixes[name]:
                args = (DB, COLL, name, lower, rng.random() < 0.5, upper, rng.random() < 0.5)
                checked += bool(_same(store, "_range_scan_index", args, {"prefix": prefix}))
    assert checked > 100


def test_equalities_and_prefixes_walk_the_same_entries_as_secantus(
        store: storage.Storage) -> None:
    calls = _planned(store, "_scan_index_for_id_keys")
    assert len(calls) >= 4, calls
    for args, kwargs in calls:
        _same(store, "_scan_index_for_id_keys", args, kwargs)
        name, kb = args[2], args[3]
        for cut in range(len(kb) + 1):  # every prefix of the key, as a prefix and as a key
            _same(store, "_scan_index_for_id_keys", (DB, COLL, name, kb[:cut]), {"prefix": True})
            _same(store, "_scan_index_for_id_keys", (DB, COLL, name, kb[:cut]), {})


def test_documents_are_fetched_the_same_as_secantus(store: storage.Storage) -> None:
    ids = _same(store, "_range_scan_index", (DB, COLL, "by_tags", None, True, None, True), {})
    assert len(ids) != len(set(ids))  # multikey: a document's RecordId more than once
    rng = random.Random(11)
    everything = list(range(-5, 1600))  # RecordIds of deleted documents and of none
    for recordids in [ids, [], everything, rng.sample(everything, 400) * 2]:
        fetched = secantus_fetching.docs_by_recordids(store, DB, COLL, recordids)
        expected = secantus_fetching._ORIGINALS["_docs_by_recordids"](store, DB, COLL, recordids)
        assert fetched == expected
        assert [type(value) for doc in fetched for value in doc.values()] == [
            type(value) for doc in expected for value in doc.values()]
    assert secantus_fetching.docs_by_recordids(store, DB, "none yet", [1, 2]) == []


def test_a_find_answers_the_same_with_the_walks_installed(store: storage.Storage) -> None:
    before = [store.find_matching(DB, COLL, query) for query in FILTERS]
    saved = {name: getattr(storage.Storage, name) for name in secantus_fetching.MIRRORED}
    try:
        assert secantus_fetching.install()
        assert [store.find_matching(DB, COLL, query) for query in FILTERS] == before
    finally:
        for name, method in saved.items():
            setattr(storage.Storage, name, method)
    assert sum(map(len, before)) > 1000


def test_the_server_vaultd_starts_walks_with_them() -> None:
    """`python -m vaultd.secantus_server` installs them (in a process of its own: installing
    here would change every other test's Storage)."""
    check = ("from secantus import storage\n"
             "from vaultd import secantus_fetching, secantus_server\n"
             "secantus_server.install()\n"
             "print(all(getattr(storage.Storage, name) is getattr(secantus_fetching,"
             " name.lstrip('_')) for name in secantus_fetching.MIRRORED))\n")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "True", done.stderr

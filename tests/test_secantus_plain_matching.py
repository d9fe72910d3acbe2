"""The embedded database as vaultd starts it (`vaultd.secantus_server`) decides a plain filter's
match (fields equal to a string or one of some strings, in a range of integers) without
SecantusDB's general matcher, and returns exactly what that matcher would: for every document of
an access-log page of 200 and a page of links' stats, and for filters and values of every other
kind, which it leaves to that matcher whole.

The finds run on a database of its own on the test worker's SecantusDB (`tests.worker_database`),
which vaultd's server module started; SecantusDB's own `query.matches` is the oracle.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import bson
import pytest
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from secantus import query

from tests import recorded_database
from vaultd.db import Db
from vaultd.secantus_matching import plain_first

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

FILE = "3f0c5d1e-6f7b-4b8e-9d5e-2f2b0c1a9e77"
# Values of every kind a field may hold, beside the plain ones (a string, an integer).
VALUES: list[Any] = [
    "a", "b", "$x", "", 5, 7, 12, Int64(7), True, False, 7.0, 7.5, math.nan, None,
    Decimal128("7"), ["a", "b"], [7, 12], [], {"n": 7}, datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 0, 0, 1000), datetime(2025, 12, 31, 23, 59),
    datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))),  # the same instant as UTC's
    datetime(2026, 1, 2, tzinfo=UTC)]
JANUARY, NAIVE_JANUARY = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1)
FILTERS: list[dict[str, Any]] = [
    {"kind": "a"}, {"kind": "$x"}, {"kind": ""},
    {"n": {"$gte": 5, "$lte": 7}}, {"n": {"$gt": 5}}, {"n": {"$lt": 12}},
    {"n": {"$gte": Int64(7)}}, {"n": {"$lte": True}}, {"n": {"$gte": 7.0}},
    {"kind": "a", "n": {"$gte": 5, "$lte": 12}}, {"n": 7}, {"n": {"$ne": 7}},
    {"n": {"$in": [7, 12]}}, {"n": {"$gte": 5, "$exists": True}}, {"n": {}},
    {"kind": {"$in": ["a", "b"]}}, {"kind": {"$in": []}}, {"kind": {"$in": ["a", 5]}},
    {"kind": {"$in": ["$x"]}}, {"kind": {"$in": ["a"], "$ne": "b"}}, {"n": {"$in": [7]}},
    {"kind.sub": "a"}, {"kind": {"$regex": "^a"}}, {"$or": [{"kind": "a"}, {"n": 7}]},
    {"n": {"$gte": JANUARY}}, {"n": {"$gt": JANUARY}}, {"n": {"$lt": JANUARY}},
    {"n": {"$gte": NAIVE_JANUARY, "$lt": datetime(2026, 1, 2)}}, {"n": {"$lte": NAIVE_JANUARY}},
    {"n": {"$gte": JANUARY, "$lt": 12}}, {"n": {"$gte": NAIVE_JANUARY, "$lte": JANUARY}},
    {"n": JANUARY}, {"kind": "a", "n": {"$lt": JANUARY}}]
# A date past Python's years (its own type), which SecantusDB's server cannot decode: matched
# here only.
UNDECODABLE = DatetimeMS(2**62)


def page_of_entries(count: int) -> list[dict[str, Any]]:
    """An access-log page's documents as the database stores them, numbered in their file."""
    entries = [{"_id": str(uuid.uuid4()), "accountId": "acct", "fileId": FILE, "action": "page",
                "at": datetime(2026, 11, 1, tzinfo=UTC), "viewerEmail": "ann@client.example",
                "ip": "203.0.113.7", "page": 3, "fileSeq": 1000 + number, "accountSeq": number}
               for number in range(count)]
    return [bson.decode(bson.encode(entry)) for entry in entries]


def counted(calls: list[int]) -> Callable[..., bool]:
    def general(doc: Any, filter: Any, *, vars: Any = None, collation: Any = None) -> bool:
        calls.append(1)
        if collation is not None:  # not SecantusDB's parsed form: only counted here
            return True
        return bool(query.matches(doc, filter, vars=vars, collation=collation))
    return general


def test_an_access_log_page_is_matched_without_the_general_matcher() -> None:
    calls: list[int] = []
    matches = plain_first(counted(calls))
    page = page_of_entries(201)
    ranged = {"fileId": FILE, "fileSeq": {"$gte": 1000, "$lte": 1200}}
    now = {"NOW": datetime.now(UTC)}  # SecantusDB passes its system variables with every match
    assert all(matches(doc, ranged, vars=now) for doc in page)
    assert not any(matches(doc, {"fileId": FILE, "fileSeq": {"$gt": 1200}}) for doc in page)
    assert not any(matches(doc, {"fileId": "another", "fileSeq": {"$gte": 0}}) for doc in page)
    ids = [doc["_id"] for doc in page[:20]]  # a page of links' stats, by their ids
    assert [doc["_id"] for doc in page if matches(doc, {"_id": {"$in": ids}})] == ids
    # a time window of the log, as the server decodes it (naive UTC dates on both sides)
    window = {"fileId": FILE, "at": {"$gte": datetime(2026, 10, 1), "$lt": datetime(2026, 11, 2)}}
    assert all(matches(doc, window) for doc in page)
    assert not any(matches(doc, {"at": {"$lt": datetime(2026, 11, 1)}}) for doc in page)
    assert calls == []  # none of the 1,206 went to SecantusDB's matcher
    assert matches(page[0], {"fileId": FILE}, collation=object())  # a collation: left to it
    assert calls == [1]


@pytest.mark.parametrize("filter", [*FILTERS, {"n": {"$gt": UNDECODABLE}}], ids=repr)
def test_every_value_matches_as_secantusdbs_matcher_says(filter: dict[str, Any]) -> None:
    matches = plain_first(query.matches)
    for kind in VALUES:
        for number in [*VALUES, UNDECODABLE]:
            doc = {"_id": "d", "kind": kind, "n": number}
            assert matches(doc, filter) == query.matches(doc, filter), (doc, filter)
    for missing in ({"_id": "d"}, {"_id": "d", "kind": "a"}, {"_id": "d", "n": 7}):
        assert matches(missing, filter) == query.matches(missing, filter), (missing, filter)


async def test_the_server_returns_what_its_own_matcher_would(db: Db) -> None:
    items = db.raw("plain_items")
    await items.create_index([("kind", 1), ("n", 1)])
    docs = [{"_id": f"i{place:04d}", "kind": kind, "n": number}
            for place, (kind, number) in enumerate(
                (kind, number) for kind in VALUES[:6] for number in VALUES)]
    await items.insert_many(docs)
    stored = await items.find({}).to_list()
    for filter in FILTERS:
        expected = sorted(doc["_id"] for doc in stored if query.matches(doc, filter))
        found = sorted([doc["_id"] async for doc in items.find(filter)])
        assert found == expected, filter

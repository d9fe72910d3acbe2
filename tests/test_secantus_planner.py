"""The embedded database as vaultd starts it (`vaultd.secantus_server`) answers a
`find_one_and_update` by `_id` from the `_id`, not by reading its whole collection, and the
filters whose index choice it changes return and change exactly what they did."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pymongo import ReturnDocument

from tests.embedded_database import running_database
from vaultd.db import connect
from vaultd.secantus_server import indexed_fields

DOCUMENTS = 20_000


async def _median_ms(call: Callable[[], Awaitable[Any]], times: int = 7) -> float:
    taken = []
    for _ in range(times):
        started = time.perf_counter()
        await call()
        taken.append((time.perf_counter() - started) * 1000)
    return statistics.median(taken)


def test_a_find_one_and_update_by_id_costs_about_an_update_by_id(tmp_path: Path) -> None:
    async def measure(uri: str) -> tuple[float, float, dict[str, Any] | None]:
        db = connect(uri, "vaultd")
        try:
            counters = db.raw("counters")
            for first in range(0, DOCUMENTS, 2000):
                await counters.insert_many([{"_id": f"c{n:06d}", "seq": 0}
                                            for n in range(first, first + 2000)])
            raised = await _median_ms(lambda: counters.find_one_and_update(
                {"_id": "c000005"}, {"$inc": {"seq": 1}}, return_document=ReturnDocument.AFTER))
            updated = await _median_ms(lambda: counters.update_one(
                {"_id": "c000006"}, {"$inc": {"seq": 1}}))
            return raised, updated, await counters.find_one({"_id": "c000005"})
        finally:
            await db.close()

    with running_database(tmp_path / "db") as server:
        raised, updated, counter = asyncio.run(measure(server.uri))
    assert counter == {"_id": "c000005", "seq": 7}
    # Unfixed, the raise read all 20,000 documents: 150-400 ms against about 1 ms.
    assert raised < 10 * updated + 15, (raised, updated)


def test_filters_with_operators_match_exactly_what_they_did(tmp_path: Path) -> None:
    async def run(uri: str) -> dict[str, Any]:
        db = connect(uri, "vaultd")
        try:
            items = db.raw("items")
            await items.create_index([("kind", 1), ("n", 1)])
            await items.insert_many([{"_id": f"i{n:03d}", "kind": "a" if n % 2 else "b", "n": n}
                                     for n in range(100)])
            return {
                "guarded miss": await items.find_one_and_update(
                    {"_id": "i003", "n": {"$gt": 50}}, {"$set": {"touched": True}}),
                "guarded hit": await items.find_one_and_update(
                    {"_id": "i053", "n": {"$gt": 50}}, {"$set": {"touched": True}},
                    return_document=ReturnDocument.AFTER),
                "and": sorted([doc["n"] async for doc in items.find(
                    {"kind": "a", "$and": [{"n": {"$lt": 10}}, {"n": {"$gt": 4}}]})]),
                "or beside a field": sorted([doc["n"] async for doc in items.find(
                    {"kind": "b", "$or": [{"n": 2}, {"n": 3}, {"n": 98}]})]),
                "expr beside a field": sorted([doc["n"] async for doc in items.find(
                    {"kind": "a", "$expr": {"$lt": ["$n", 6]}})]),
                "updated by and": (await items.update_many(
                    {"$and": [{"kind": "b"}, {"n": {"$gte": 90}}]}, {"$set": {"late": True}})
                ).modified_count,
                "touched": await items.count_documents({"touched": True}),
            }
        finally:
            await db.close()

    with running_database(tmp_path / "db") as server:
        found = asyncio.run(run(server.uri))
    assert found == {
        "guarded miss": None,
        "guarded hit": {"_id": "i053", "kind": "a", "n": 53, "touched": True},
        "and": [5, 7, 9],
        "or beside a field": [2, 98],
        "expr beside a field": [1, 3, 5],
        "updated by and": 5,
        "touched": 1,
    }


def test_the_index_choice_sees_the_fields_of_an_and_and_leaves_the_rest() -> None:
    assert indexed_fields({"_id": "x", "$and": [{"_id": "x", "seq": 1}]}) == {"_id": "x",
                                                                              "seq": 1}
    assert indexed_fields({"kind": "a", "$or": [{"n": 1}, {"n": 2}]}) == {"kind": "a"}
    assert indexed_fields({"$and": [{"$or": [{"n": 1}]}, {"kind": "a"}]}) == {"kind": "a"}
    assert indexed_fields({"$or": [{"n": 1}, {"n": 2}]}) is None  # nothing to choose by
    assert indexed_fields({"kind": "a", "n": 1}) is None  # no operator: SecantusDB's own plan
    assert indexed_fields({"kind": "a", "$text": {"$search": "x"}}) is None

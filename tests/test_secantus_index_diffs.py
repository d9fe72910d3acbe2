"""The embedded database as vaultd starts it (`vaultd.secantus_server`) rewrites, on an update,
only the index entries whose keys changed: after hundreds of random updates through both of
SecantusDB's update paths (`update_many`, `find_one_and_update`), each index holds exactly one
entry per document within it, with its current keys: a query on one value by that index reads
exactly the documents holding it (a stale entry would be read and dropped: `explain` counts
it), a unique key given up is free again and one held still refuses a second holder, a
document leaving a partial index leaves it, and an array's elements move with it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from tests.embedded_database import running_database
from vaultd.db import connect

pytestmark = pytest.mark.slow  # starts its own database server

DOCUMENTS = 150
UPDATES = 400
# name -> (keys, options); each queried below on one field's value.
INDEXES: dict[str, tuple[list[tuple[str, int]], dict[str, Any]]] = {
    "a_1": ([("a", 1)], {}),
    "b_1_c_1": ([("b", 1), ("c", 1)], {}),
    "u_1": ([("u", 1)], {"unique": True}),
    "p_1": ([("p", 1)], {"partialFilterExpression": {"p": {"$gt": 5}}}),
    "tags_1": ([("tags", 1)], {}),
    "s_1": ([("s", 1)], {"sparse": True}),
}


def _change(draw: random.Random, doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random `$set` (and `$unset`) of a few fields, some to the value they hold."""
    sets: dict[str, Any] = {"other": draw.randrange(1000)}  # in no index
    for field in draw.sample(["a", "b", "c", "p", "tags", "s"], draw.randrange(0, 4)):
        sets[field] = {"tags": lambda: draw.sample(range(8), draw.randrange(0, 3)),
                       "p": lambda: draw.randrange(10)}.get(field, lambda: draw.randrange(6))()
    if draw.random() < 0.3:
        sets[draw.choice(["a", "b"])] = doc.get("a")  # unchanged or moved to another's value
    unsets = {"s": ""} if draw.random() < 0.15 and "s" not in sets else {}
    return sets, unsets


def _apply(doc: dict[str, Any], sets: dict[str, Any], unsets: dict[str, Any]) -> None:
    doc.update(sets)
    for field in unsets:
        doc.pop(field, None)


def _holds(doc: dict[str, Any], index: str, field: str, value: Any) -> bool:
    if index == "p_1" and not doc.get("p", -1) > 5:
        return False
    if field == "tags":
        return value in doc.get("tags", [])
    return doc.get(field) == value


async def test_each_index_holds_exactly_its_current_entries(tmp_path: Path) -> None:
    draw = random.Random(46)
    with running_database(tmp_path / "db") as server:
        db = connect(server.uri, "vaultd")
        try:
            things = db.raw("things")
            for name, (keys, options) in INDEXES.items():
                await things.create_index(keys, name=name, **options)
            model = {n: {"_id": n, "a": draw.randrange(6), "b": draw.randrange(6),
                         "c": draw.randrange(6), "u": f"u{n}", "p": draw.randrange(10),
                         "tags": draw.sample(range(8), 2), "s": draw.randrange(6)}
                     for n in range(DOCUMENTS)}
            await things.insert_many([dict(doc) for doc in model.values()])
            for step in range(UPDATES):
                doc_id = draw.randrange(DOCUMENTS)
                sets, unsets = _change(draw, model[doc_id])
                update = {"$set": sets, **({"$unset": unsets} if unsets else {})}
                if step % 2:
                    await things.find_one_and_update({"_id": doc_id}, update,
                                                     return_document=ReturnDocument.AFTER)
                else:  # a batch, as the background steps send: `_id` in a few
                    await things.update_many({"_id": {"$in": [doc_id]}}, update)
                _apply(model[doc_id], sets, unsets)

            # A unique key given up is free again; one still held refuses a second holder.
            await things.update_one({"_id": 0}, {"$set": {"u": "moved", "other": 1}})
            await things.insert_one({"_id": "new", "u": "u0"})
            with pytest.raises(DuplicateKeyError):
                await things.update_one({"_id": 1}, {"$set": {"u": "moved"}})
            with pytest.raises(DuplicateKeyError):
                await things.insert_one({"_id": "second", "u": "u2"})
            await things.delete_one({"_id": "new"})
            model[0].update(u="moved", other=1)

            assert await things.find({}).sort("_id", 1).to_list() == \
                [model[n] for n in range(DOCUMENTS)]
            for index, field, values in [("a_1", "a", range(6)), ("b_1_c_1", "b", range(6)),
                                         ("p_1", "p", range(6, 10)), ("tags_1", "tags", range(8)),
                                         ("s_1", "s", range(6)),
                                         ("u_1", "u", [doc["u"] for doc in model.values()])]:
                for value in values:
                    expected = sorted(n for n, doc in model.items()
                                      if _holds(doc, index, field, value))
                    query = {field: value}
                    found = await things.find(query, {"_id": 1}).hint(index).to_list()
                    assert sorted(doc["_id"] for doc in found) == expected, (index, value)
                    stats = await db.database.command(
                        "explain", {"find": "things", "filter": query, "hint": index},
                        verbosity="executionStats")
                    assert stats["executionStats"]["totalDocsExamined"] == len(expected), \
                        (index, value)
        finally:
            await db.close()

"""Counters that number records within a scope (an account's activity events, a person's
sessions), for records whose writer touches no record of that scope already: one document per
scope in `number_counters`, raised by one `find_one_and_update` before the record's insert.

The numbers are dense, so the newest `n` records of a scope lie in its last `n` numbers
(`services.common.numbered`); a write that fails after taking its number leaves a gap, which
the readers step over. Records written before their scope was numbered get numbers from 0 down
(`numbered.number_unnumbered`), and the counter their lowest as `floor`.
"""

from __future__ import annotations

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.records.members import NumberCounterDoc


async def next_number(db: Db, scope: str) -> int:
    """The scope's next number (1 for its first record)."""
    try:
        counter = await _raised(db, scope)
    except DuplicateKeyError:  # two first records at once: the other one made the counter
        counter = await _raised(db, scope)
    return int(counter.get("seq", 0))


async def _raised(db: Db, scope: str) -> NumberCounterDoc:
    counter = await db.number_counters.find_one_and_update(
        {"_id": scope}, {"$inc": {"seq": 1}}, upsert=True, return_document=ReturnDocument.AFTER)
    assert counter is not None  # upserted
    return counter


async def bounds(db: Db, scope: str) -> tuple[int, int]:
    """(top, floor): the scope's last number given and the lowest any of its records has."""
    counter = await db.number_counters.find_one({"_id": scope})
    if counter is None:
        return 0, 1
    return int(counter.get("seq", 0)), min(int(counter.get("floor", 1)), 1)


async def lower_floor(db: Db, scope: str, lowest: int) -> None:
    """Records of the scope numbered down to `lowest` (written before it was numbered)."""
    await db.number_counters.update_one({"_id": scope}, {"$min": {"floor": lowest}}, upsert=True)

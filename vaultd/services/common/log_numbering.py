"""Numbers the access log's entries in their file, account and room, and in each one's log of
the entry's action (`numbered_log.ALL_SCOPES`: one `$set` gives all six), after their insert.

The page path's insert is one command and must stay so (`tests/test_page_commands.py`), so an
entry cannot take a number from a counter as an activity event does. The audit sequencer's
round has just set the log fence (`log_fence`) at its horizon: no entry written through
`access_log.record` stamped before it can land any more. So a round numbers the closed
stretch from the last numbering horizon up to the new one, in the log's order (time, then
`_id`), and moves the horizon: every entry stamped before the horizon has its numbers, dense
per scope and in the order the reads want (`numbered_log`). Per round: one read of the stretch
on the `at` index, one `$inc` per scope in one command and a read of the new tops, then the
entries' numbers, UPDATE_BATCH per command, at most MAX_PER_ROUND entries.

Killed between its writes, a round leaves counters raised and some entries numbered past the
horizon it did not move: the next round numbers the whole stretch again with new numbers
(the old ones become gaps, which the reads step over), and the reads ignore numbers past the
horizon meanwhile. One holder at a time: the audit lease (a holder paused past its lease while
another numbers the same stretch could interleave their numbers: the audit's epoch fences its
own writes, this does not). The first round numbers nothing: it marks where numbers start
(each scope's counter keeps its first numbered entry's time, `since`), and what is older is
read by time until the walk of the older entries (`older_log_numbering`) has numbered it below
1. A log numbered before the numbers per action existed gets them from the next round on
(`actionsFrom`, where that walk starts).
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from pymongo import UpdateOne
from pymongo.errors import PyMongoError

from vaultd.db import Db
from vaultd.services.common import log_fence
from vaultd.services.common.numbered_log import ALL_SCOPES, HORIZON

log = logging.getLogger("vaultd.audit")
# At most this much of the log per round: after a pause (no round for a while) the numbering
# catches up a stretch at a time, each round's read bounded by what the stretch holds.
MAX_STRETCH = timedelta(seconds=60)
UPDATE_BATCH = 10  # entries numbered per command, as the revoke marking: each carries many indexes
# Entries numbered per round, at most: the audit's round waits for its numbering, so a burst is
# numbered over several rounds rather than holding back the next round's sequencing (an update
# costs about what an insert does: docs/performance-records.md, *The access log by number*).
MAX_PER_ROUND = 500
# The stretch a round reads adapts to the log's density: the read walks the whole stretch (the
# embedded database does not push a limit down), so after a round that found more than it could
# number, the next reads only as long a stretch as held what it numbered; after one that found
# less than half of it, twice as long (up to MAX_STRETCH). A burst then costs each round about
# MAX_PER_ROUND entries read, not the burst's rest again and again.
MIN_STRETCH = timedelta(milliseconds=10)
IN_CHUNK = 200  # counters read back per command
FIELDS = {"at": 1, "action": 1, **{scope.field: 1 for scope in ALL_SCOPES}}
READ_IT = object()  # `number_new_entries`' default: the numbering's record is read there


async def number_new_entries(db: Db, horizon: datetime, state: Any = READ_IT) -> int:
    """Numbers the entries stamped before `horizon` (the log fence stands there) that the last
    round left; how many it numbered. `state`: the numbering's record (HORIZON) as the caller
    read it this round, or None where there is none; read here by default. A database error is
    logged, not raised: the audit round that calls it goes on, and the next round numbers the
    same stretch."""
    try:
        if state is READ_IT:
            state = await read_state(db)
        return await _number(db, horizon, state)
    except PyMongoError as error:
        log.warning("access log numbering skipped this round: %s", error)
        return 0


async def read_state(db: Db) -> Any:
    """The numbering's record: its horizon, its stretch, the older entries' walk's place."""
    return await db.number_counters.find_one({"_id": HORIZON})


async def _number(db: Db, horizon: datetime, state: Any) -> int:
    counters = db.number_counters
    if state is None or "horizon" not in state:  # the first round: numbers start here
        await counters.update_one({"_id": HORIZON}, {"$setOnInsert": {
            "horizon": horizon, "actionsFrom": horizon}}, upsert=True)
        return 0
    start = state["horizon"]
    stretch = _MS * float(state.get("stretchMs", MAX_STRETCH / _MS))
    stop = min(horizon, start + stretch)
    if stop <= start:
        return 0
    entries = db.raw(db.access_log.name)
    docs = await entries.find({"at": {"$gte": start, "$lt": stop}}, FIELDS).to_list()
    docs.sort(key=lambda doc: (doc["at"], doc["_id"]))
    found = len(docs)
    docs, stop = _capped(docs, stop)
    stretch = _next_stretch(stretch, found, stop - start)
    counts: Counter[str] = Counter()
    first: dict[str, datetime] = {}
    for doc in docs:
        for key in scope_keys(doc).values():
            counts[key] += 1
            first.setdefault(key, doc["at"])
    if counts:
        await counters.bulk_write([UpdateOne(
            {"_id": key}, {"$inc": {"seq": count}, "$min": {"since": first[key]}},
            upsert=True) for key, count in counts.items()], ordered=False)
        given = await _tops(db, list(counts))
        following = {key: given[key] - counts[key] for key in counts}
        # The fence's mark goes: it only ever mattered to the insert, and the fence's
        # validator refuses any change to an entry behind it that still carries it.
        updates = [UpdateOne({"_id": doc["_id"]}, {"$set": _numbers(doc, following),
                                                   "$unset": {log_fence.FENCED: ""}})
                   for doc in docs]
        for at in range(0, len(updates), UPDATE_BATCH):
            await entries.bulk_write(updates[at:at + UPDATE_BATCH], ordered=False)
    # Only once every entry of the stretch has its numbers do the reads use them.
    # Where the numbers per action started (the older entries' walk starts there): a log
    # numbered before them has its entries from then on numbered per action by this round on.
    await counters.update_one({"_id": HORIZON}, {"$max": {"horizon": stop},
                                                 "$min": {"actionsFrom": start},
                                                 "$set": {"stretchMs": stretch / _MS}})
    return len(docs)


_MS = timedelta(milliseconds=1)


def _next_stretch(stretch: timedelta, found: int, numbered_span: timedelta) -> timedelta:
    if found > MAX_PER_ROUND:
        return max(MIN_STRETCH, numbered_span)
    if found < MAX_PER_ROUND // 2:
        return min(MAX_STRETCH, stretch * 2)
    return stretch


def _capped(docs: list[Any], stop: datetime) -> tuple[list[Any], datetime]:
    """The first MAX_PER_ROUND entries of the stretch and where they end, cut between two
    milliseconds (the stretch numbered is `[start, stop)`: an entry is in it whole or not);
    one millisecond holding more goes whole."""
    if len(docs) <= MAX_PER_ROUND:
        return docs, stop
    cut = docs[MAX_PER_ROUND]["at"]
    if cut == docs[0]["at"]:
        cut = next((doc["at"] for doc in docs if doc["at"] > cut), stop)
    return [doc for doc in docs if doc["at"] < cut], cut


def scope_keys(doc: Any) -> dict[str, str]:
    """The number field and counter of each scope the entry is in (its file's, account's and
    room's log, and each one's log of the entry's action)."""
    keys = {scope.number: scope.key_of(doc) for scope in ALL_SCOPES}
    return {field: key for field, key in keys.items() if key is not None}


def _numbers(doc: Any, following: dict[str, int]) -> dict[str, int]:
    numbers = {}
    for field, key in scope_keys(doc).items():
        following[key] += 1
        numbers[field] = following[key]
    return numbers


async def _tops(db: Db, keys: list[str]) -> dict[str, int]:
    tops: dict[str, int] = {}
    for at in range(0, len(keys), IN_CHUNK):
        async for counter in db.number_counters.find({"_id": {"$in": keys[at:at + IN_CHUNK]}},
                                                     {"seq": 1}):
            tops[counter["_id"]] = int(counter.get("seq", 0))
    return tops

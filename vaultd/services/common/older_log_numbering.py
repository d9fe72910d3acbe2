"""Numbers the access log's entries written before the rounds numbered them, once, going back in
time from where the rounds started, so that every read is by number once it is done.

The rounds (`log_numbering`) number what arrives from their first horizon on (from
`actionsFrom` per action: a log numbered before the numbers per action existed has entries
with their scopes' numbers and none per action). Below that the walk numbers every entry,
newest first, below 1 in each of its scopes (0, -1, -2...: the counter's `older` says how many,
so a scope's numbers reach `1 - older`), and keeps every number an entry already has from a
round: the numbers stay dense per scope and in the log's order across the two. Its position
(`back`, in the horizon's record) means: every entry from there up to the horizon has all its
numbers, so the reads (`numbered_log`) take everything above it by number and only what lies
below by time, in every scope alike; once the walk has passed the oldest entry, nothing.

A step reads one window of the log before `back` on the `at` index (sized, as the rounds'
stretch, from what the last step found: a burst costs each step about what it numbers), takes
its newest entries up to the round's budget (cut between two milliseconds), lowers their
scopes' counters in one command, reads them back, writes the entries' numbers UPDATE_BATCH per
command, then moves `back`. Killed in between, a step leaves counters lowered and entries
below `back` numbered: the next step (in this process or the next to hold the audit lease)
numbers the same window again with lower numbers; the numbers it left become gaps, and the
reads skip a number on an entry below `back`. A number below 1 on an entry below `back` is
always such a leftover: a step gives it again. The walk runs in the audit sequencer's round,
after the new entries (`number_log`), in the process holding the audit lease; its state lives
with the counters (`number_counters`), so a backup carries it with the numbers it describes
(`storage.backup` exports the horizon's record before the counters), rather than a marker in
`migrations`, which restore leaves out.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import UpdateOne
from pymongo.errors import PyMongoError

from vaultd.db import Db
from vaultd.services.common import log_fence, log_numbering
from vaultd.services.common.log_numbering import (
    FIELDS,
    IN_CHUNK,
    MAX_PER_ROUND,
    UPDATE_BATCH,
    scope_keys,
)
from vaultd.services.common.numbered_log import ALL_SCOPES, HORIZON, older_walk_done

log = logging.getLogger("vaultd.audit")
# Nothing vaultd wrote is older (`numbered.EPOCH`): the walk is done once its window reaches it.
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
FIRST_WINDOW = timedelta(seconds=1)
MIN_WINDOW = timedelta(milliseconds=10)
MAX_WINDOW = timedelta(days=1)  # after windows that found little; an empty one grows past it
GROWTH = 8  # an empty window is followed by one this many times longer, within the same step
# A step numbers only with what the round's new entries left of MAX_PER_ROUND, and none when
# they left less than this: the new entries come first.
MIN_STEP = 50
READ = {**FIELDS, **{scope.number: 1 for scope in ALL_SCOPES}}
_MS = timedelta(milliseconds=1)


async def number_log(db: Db, horizon: datetime) -> int:
    """What the audit round runs behind its fence: the new entries up to `horizon`, then a step
    of the older ones with what is left of the round's budget; how many entries it numbered."""
    numbered, _ = await _number_log(db, horizon)
    return numbered


class LogNumbering:
    """`number_log` as the audit sequencer calls it, knowing whether the older entries' walk
    is done (`settled`): until it is, every round is a full one (`audit.quiet`), a step each."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.settled = False

    async def __call__(self, horizon: datetime) -> int:
        numbered, self.settled = await _number_log(self.db, horizon)
        return numbered


async def _number_log(db: Db, horizon: datetime) -> tuple[int, bool]:
    """How many entries it numbered, and whether the walk was done before it (read with the
    state; a walk that ends in this round is seen done by the next). The numbering's record is
    read once for both: a round whose walk is done (every round, once the older entries are
    numbered) reads it no more; a step of a walk still going reads it again (the new entries'
    numbering has just moved its horizon)."""
    try:
        state = await log_numbering.read_state(db)
    except PyMongoError as error:
        log.warning("access log numbering skipped this round: %s", error)
        return 0, False
    new = await log_numbering.number_new_entries(db, horizon, state)
    if done(state):
        return new, True
    if MAX_PER_ROUND - new < MIN_STEP:
        return new, False
    return new + await number_older_entries(db, MAX_PER_ROUND - new), False


async def number_older_entries(db: Db, budget: int) -> int:
    """One step of the walk, at most about `budget` entries (one millisecond holding more goes
    whole); how many it numbered. A database error is logged, not raised: the next round
    takes the same step again."""
    try:
        return await _step(db, budget)
    except PyMongoError as error:
        log.warning("older access log entries not numbered this round: %s", error)
        return 0


def done(state: Any) -> bool:
    """Whether the walk has numbered every entry below where the rounds started."""
    return older_walk_done(state)


async def _step(db: Db, budget: int) -> int:
    counters = db.number_counters
    state = await counters.find_one({"_id": HORIZON})
    if state is None or "actionsFrom" not in state or done(state):
        return 0  # nothing numbered yet (the rounds start the walk's place), or done
    back = min(state.get("back", state["actionsFrom"]), state["horizon"])
    window = _MS * float(state.get("backMs", FIRST_WINDOW / _MS))
    docs, lower = await _window(db, back, window)
    docs.sort(key=lambda doc: (doc["at"], doc["_id"]), reverse=True)
    found = len(docs)
    docs, cut = _newest(docs, budget, lower)
    oldest = await _give(db, docs)
    # Then, in one command: the walk's place, and each scope's oldest numbered entry lowered to
    # what it numbered (the reads take them by number from there). Cut short between the two,
    # a scope's entries of this step are read by time, as before it: never by a number that
    # is not whole. Before its first statement, the next step numbers them again.
    place = UpdateOne({"_id": HORIZON}, {"$set": {"back": EPOCH if cut <= EPOCH else cut,
                                                  "backMs": _next_window(
                                                      back - lower, found, back - cut,
                                                      budget) / _MS}})
    await counters.bulk_write([place, *(UpdateOne({"_id": key}, {"$min": {"since": at}})
                                        for key, at in oldest.items())], ordered=True)
    return len(docs)


async def _window(db: Db, back: datetime, window: timedelta) -> tuple[list[Any], datetime]:
    """The entries of the first window before `back` that holds any (windows growing eightfold
    while empty, down to EPOCH), and where it starts."""
    entries = db.raw(db.access_log.name)
    while True:
        lower = max(back - window, EPOCH)
        docs = await entries.find({"at": {"$gte": lower, "$lt": back}}, READ).to_list()
        if docs or lower <= EPOCH:
            return docs, lower
        window *= GROWTH


def _newest(docs: list[Any], budget: int, lower: datetime) -> tuple[list[Any], datetime]:
    """The newest `budget` of a window's entries (newest first) and where they start, cut
    between two milliseconds: the stretch numbered is `[cut, back)`, each entry in it whole."""
    if len(docs) <= budget:
        return docs, lower
    cut = docs[budget - 1]["at"]
    return [doc for doc in docs if doc["at"] >= cut], cut


def _next_window(window: timedelta, found: int, numbered_span: timedelta,
                 budget: int) -> timedelta:
    if found > budget:
        return max(MIN_WINDOW, numbered_span)
    if found < budget // 2:
        return min(MAX_WINDOW, window * 2)
    return window


def _missing(doc: Any, since: dict[str, datetime]) -> dict[str, str]:
    """The scopes the entry needs a number in: those it has none in, or one below 1 on an entry
    older than its scope's oldest numbered one (a dead step's, which the reads skip)."""
    return {field: key for field, key in scope_keys(doc).items()
            if field not in doc or (doc[field] < 1 and (key not in since
                                                         or doc["at"] < since[key]))}


async def _give(db: Db, docs: list[Any]) -> dict[str, datetime]:
    """Numbers `docs` (newest first) below each scope's lowest number; the oldest entry given a
    number, by scope."""
    keys = sorted({key for doc in docs for key in scope_keys(doc).values()})
    known: dict[str, Any] = {}
    for at in range(0, len(keys), IN_CHUNK):
        async for counter in db.number_counters.find({"_id": {"$in": keys[at:at + IN_CHUNK]}},
                                                     {"older": 1, "since": 1}):
            known[counter["_id"]] = counter
    since = {key: counter["since"] for key, counter in known.items() if "since" in counter}
    needs = [(doc, _missing(doc, since)) for doc in docs]
    counts: Counter[str] = Counter(key for _, missing in needs for key in missing.values())
    if not counts:
        return {}
    await db.number_counters.bulk_write([UpdateOne(
        {"_id": key}, {"$inc": {"older": count}}, upsert=True) for key, count in counts.items()],
        ordered=False)
    # One holder at a time (the audit lease): the numbers below 1 given so far are those read.
    following = {key: int(known.get(key, {}).get("older", 0)) for key in counts}
    oldest: dict[str, datetime] = {}
    updates = []
    for doc, missing in needs:
        numbers = {}
        for field, key in missing.items():
            numbers[field] = -following[key]
            following[key] += 1
            oldest[key] = doc["at"]
        if numbers:
            updates.append(UpdateOne({"_id": doc["_id"]}, {
                "$set": numbers, "$unset": {log_fence.FENCED: ""}}))
    entries = db.raw(db.access_log.name)
    for at in range(0, len(updates), UPDATE_BATCH):
        await entries.bulk_write(updates[at:at + UPDATE_BATCH], ordered=False)
    return oldest

"""The access log read newest first by its entries' numbers in a scope (a file, an account, a
room), so that a page costs what it returns whatever the arrival pattern.

The page path's log insert stays one command, so an entry has no number when it lands: the
audit sequencer's round numbers, after its insert, every entry stamped before the round's
horizon (`log_numbering`), and moves the numbering horizon there. Numbers are dense per
scope and follow the log's order, time then `_id`, because a round numbers a closed stretch
of time that no late entry can still land in (the log fence stands at its end). A read is
then three parts, newest first, each in the log's order:

1. the *tail*, entries stamped at or after the numbering horizon (those of the last merge
   delay, and any stamped ahead by a clock): time windows (`common.newest`), bounded by what
   a merge delay holds, not by a burst older than it;
2. the *numbered* part, from where the scope's numbers start up to the horizon: ranges of
   numbers on (scope, number) (`common.numbered`), which hold at most as many entries as they
   are wide however the entries arrived;
3. the *old* part, entries older than the scope's oldest numbered entry (its counter's
   `since`): time windows again. The rounds number from their first horizon on; the walk of
   the entries written before (`older_log_numbering`) numbers them below 1 going back in time
   (the counter's `older` says how many: the scope's numbers reach `1 - older`) and lowers
   `since` to the oldest it numbered, so once it is done the old part holds nothing and is
   read in one range. An entry inserted later with an older time, by a tool, is still read
   there; once a read finds a page of them, that scope's old part is read by windows
   (`OLD_ENTRIES`, on its counter), so that no read walks a tool's import whole but that one,
   until a read of its whole old part by windows finds nothing (the import deleted): the mark
   is then lifted. Other scopes keep their one range.

A first page that reaches the scope's first number (a scope of no more numbered entries than
the page, as most files' and rooms' are) reads parts 2 and 3 together, as one range of time
from the horizon back: the numbered entries are the range's newest, and there are no more of
them than a page, so the range costs what the two reads would, in one round trip.

A scope read with `action` is that action's entries in it, numbered per (scope, action) by the
same rounds and walk (`fileActionSeq`...: `ACTION_SCOPES`), and read the same way on indexes of
(scope, action, number) and (scope, action, at).

A position `below` is exclusive in that order: `(at, "")` is the API's `before` (every entry
stamped before `at`), `(at, id)` the console's cursor (the entries after that one). Where the
log is not numbered at all (no numbering round has run: `audit.enabled` off everywhere) or the
scope has no numbered entry, the caller's time windows read it, as before numbers. A number on
an entry outside `[since, horizon)` is one a round or a step of the walk gave before it died
(the next gives it again): the reads skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.records.members import NumberCounterDoc
from vaultd.services.common.newest import FIRST_WINDOW, newest
from vaultd.services.common.numbered import EPOCH, newest_numbered
from vaultd.timefmt import utcnow

HORIZON = "access_log:horizon"  # number_counters: every entry stamped before it is numbered
# On a scope's counter: when a read first found a page of entries below the scope's numbers
# after the older entries' walk was done (written since by a tool, with older times). (Earlier
# versions marked the whole log, on HORIZON: that mark is no longer read.)
OLD_ENTRIES = "oldEntriesAt"
CLOCK_SLACK = timedelta(minutes=1)  # entries stamped by a clock ahead of this process's
# The tail's first window: what lies between the horizon and now plus the slack, at once, when
# the horizon is fresh (a merge delay and the slack); one stale far behind (no round for a
# while) is stepped through by windows from there.
TAIL_WINDOW = timedelta(minutes=2)

Position = tuple[datetime, str]


@dataclass(frozen=True)
class LogScope:
    field: str  # the entry's field naming the scope
    number: str  # the entry's number in it
    kind: str  # its counter's name: access_log:<kind>:<value>[:<action>]
    by_action: bool = False  # numbered per (scope, action): the log of one action

    def counter(self, value: str, action: str | None = None) -> str:
        return f"access_log:{self.kind}:{value}" + (f":{action}" if self.by_action else "")

    def query(self, value: str, action: str | None = None) -> dict[str, Any]:
        return {self.field: value, "action": action} if self.by_action else {self.field: value}

    def key_of(self, entry: Any) -> str | None:
        """The counter of the entry's scope (None: the entry is in no such scope)."""
        value = entry.get(self.field)
        if not value or (self.by_action and not entry.get("action")):
            return None
        return self.counter(value, entry.get("action"))


FILE = LogScope("fileId", "fileSeq", "file")
ACCOUNT = LogScope("accountId", "accountSeq", "account")
ROOM = LogScope("roomId", "roomSeq", "room")
SCOPES = (FILE, ACCOUNT, ROOM)
# The same scopes' logs of one action (`?action=`), numbered by the same round in the same
# `$set`: a rare action under a burst of another is a range of its own numbers.
FILE_ACTION = LogScope("fileId", "fileActionSeq", "file-action", by_action=True)
ACCOUNT_ACTION = LogScope("accountId", "accountActionSeq", "account-action", by_action=True)
ROOM_ACTION = LogScope("roomId", "roomActionSeq", "room-action", by_action=True)
ACTION_SCOPES = {FILE: FILE_ACTION, ACCOUNT: ACCOUNT_ACTION, ROOM: ROOM_ACTION}
ALL_SCOPES = (*SCOPES, *ACTION_SCOPES.values())
# What a numbered entry's number matches (the walk's go below 1): the partial filter of the
# indexes per action, which every range of numbers implies (so the planner takes them).
NUMBERED = {"$gte": -(2**62)}


def numbered_from(state: NumberCounterDoc | None,
                  counter: NumberCounterDoc | None) -> datetime | None:
    """Where the scope's numbered part starts (every entry of the scope from there to the
    horizon has its number): its oldest numbered entry (the counter's `since`: the first a
    round numbered, lowered by the older entries' walk). A scope without a counter once the
    walk is done has no entry before the horizon that vaultd wrote: nothing is numbered, and
    its part before the horizon is read as the old part (nearly always empty). None: nothing
    numbered, and the scope may hold entries before the walk's place."""
    if state is None or "horizon" not in state:
        return None
    if counter is None and older_walk_done(state):
        return state["horizon"]
    if counter is None or "since" not in counter:
        return None
    return min(counter["since"], state["horizon"])


def older_walk_done(state: NumberCounterDoc | None) -> bool:
    """Whether the older entries' walk (`older_log_numbering`) has numbered every entry below
    where the rounds started: below a scope's numbers lie then only entries a tool wrote since
    with older times (a test's, a script's)."""
    back = None if state is None else state.get("back")
    return back is not None and back <= EPOCH


async def newest_entries(db: Db, scope: LogScope, value: str, *, count: int, oldest: datetime,
                         below: Position | None = None,
                         action: str | None = None) -> list[Any] | None:
    """Up to `count + 1` entries of the scope (of one `action`: by its numbers in the scope),
    newest first (the one past `count` tells the caller what follows), below `below` and at or
    after `oldest`; None where the scope is not numbered, for the caller's time windows."""
    if action is not None:
        scope = ACTION_SCOPES[scope]
    key = scope.counter(value, action)
    found = {doc["_id"]: doc async for doc in
             db.number_counters.find({"_id": {"$in": [HORIZON, key]}})}
    state, counter = found.get(HORIZON), found.get(key)
    marked = counter is not None and OLD_ENTRIES in counter
    if counter is not None and counter.keys() <= {"_id", OLD_ENTRIES}:
        counter = None  # written for the mark alone: the scope has nothing numbered
    edge = numbered_from(state, counter)
    if state is None or edge is None:
        return None
    horizon = state["horizon"]
    top, floor = (counter.get("seq", 0), 1 - counter.get("older", 0)) if counter else (0, 1)
    log = db.raw(db.access_log.name)
    query = scope.query(value, action)
    wanted = count + 1
    out: list[Any] = []
    if below is None or below[0] >= horizon:
        out += await by_time(log, query, wanted, below, max(horizon, oldest))
    whole_old = older_walk_done(state) and not marked
    if (len(out) < wanted and below is None and counter is not None and whole_old
            and oldest < edge < horizon and top - floor + 1 <= wanted - len(out)):
        # The page reaches past the scope's first number: its numbered part (no more entries
        # than a page) and its old part (expected empty) in one range of time, one round trip
        # where two were. What the range holds is what the two reads would hold.
        return out + await _small_scope(db, log, query, wanted - len(out), edge, horizon, oldest,
                                        key)
    if len(out) < wanted and edge < horizon and (below is None or below[0] >= edge):
        inside = below if below is not None and below[0] < horizon else None
        upper = (top if inside is None
                 else await _number_below(log, query, scope.number, inside, edge, floor))
        if upper is None:  # no number to start from (an entry written around the fence)
            out += await by_time(log, query, wanted - len(out), inside, max(edge, oldest))
        else:
            def numbered(doc: Any) -> bool:  # a number past the horizon or below the edge:
                return (edge <= doc["at"] < horizon  # a round's or a walk's that died
                        and (below is None or (doc["at"], doc["_id"]) < below))
            out += await newest_numbered(log, query, scope.number, count=wanted - len(out),
                                         top=upper, floor=floor, keep=numbered)
    # Below where the numbers start: by time. Once the older entries' walk is done that part
    # holds only what a tool wrote with older times, nothing in a vault that wrote its own
    # log: one range of it, rather than windows growing back to `oldest` (the account's log
    # goes back to EPOCH: eight round trips to find nothing, most of an empty log's read).
    # SecantusDB walks a range whole, so once a read finds a page there (a tool's import of
    # older entries), the scope is marked and its old part read by windows sized by what they
    # find, until a read of the whole old part finds it empty again (the import deleted).
    if len(out) < wanted and oldest < edge:
        old_edge = min(below, (edge, "")) if below is not None else (edge, "")
        left = wanted - len(out)
        old = await by_time(log, query, left, old_edge, oldest, whole=whole_old)
        if whole_old and len(old) >= left:
            await _mark(db, key)
        elif marked and not old and old_edge == (edge, ""):
            await db.number_counters.update_one({"_id": key}, {"$unset": {OLD_ENTRIES: ""}})
        out += old
    return out[:wanted]


async def _mark(db: Db, key: str) -> None:
    """The scope's old part holds a page of entries a tool wrote (`OLD_ENTRIES`, on its
    counter: one written for the mark alone where the scope has none)."""
    await db.number_counters.update_one({"_id": key}, {"$min": {OLD_ENTRIES: utcnow()}},
                                        upsert=True)


async def _small_scope(db: Db, log: AsyncCollection[Any], query: dict[str, Any], count: int,
                       edge: datetime, horizon: datetime, oldest: datetime,
                       key: str) -> list[Any]:
    """Up to `count` entries of the scope (its counter `key`) from the horizon back to
    `oldest`, newest first, in one range: those from `edge` on are its numbered ones, those
    before it its old part. The old part filling what the numbered ones left of the page is a
    tool's import, marked as the old part's own read marks it (`_mark`)."""
    docs = await by_time(log, query, count, (horizon, ""), oldest, whole=True)
    old = sum(1 for doc in docs if doc["at"] < edge)
    if old and old >= count - (len(docs) - old):
        await _mark(db, key)
    return docs


async def by_time(log: AsyncCollection[Any], query: dict[str, Any], count: int,
                  below: Position | None, oldest: datetime, *, whole: bool = False) -> list[Any]:
    """Up to `count` entries of `query` below `below`, at or after `oldest`, newest first, by
    time windows: the rest of `below`'s millisecond (few entries), then strictly before it.
    `whole`: the stretch is expected empty, and its first window is all of it."""
    docs: list[Any] = []
    before = below[0] if below is not None else None
    if below is not None and below[1]:
        tied = await log.find({**query, "at": below[0]}).to_list()
        docs = sorted((doc for doc in tied if doc["_id"] < below[1]),
                      key=lambda doc: doc["_id"], reverse=True)[:count]
    if len(docs) < count and (before is None or before > oldest):
        latest = before or utcnow() + CLOCK_SLACK
        first = latest - oldest if whole else min(latest - oldest, TAIL_WINDOW)
        page = await newest(log, query, "at", count=count - len(docs), before=before,
                            oldest=oldest, latest=latest, first_window=max(first, FIRST_WINDOW))
        docs += page.docs
    return docs


async def _number_below(log: AsyncCollection[Any], query: dict[str, Any], number: str,
                        below: Position, edge: datetime, floor: int) -> int | None:
    """The highest number among the entries below `below` (floor - 1: none), from the entries
    of its millisecond (a page's last entry and its ties: read by equality, few), else from
    the newest entry before it back to `edge` (a time typed by hand: time windows back from
    it)."""
    at, entry_id = below
    tied = await log.find({**query, "at": at}).to_list()
    above = [doc[number] for doc in tied if doc["_id"] >= entry_id and number in doc]
    if above:
        return int(min(above)) - 1
    under = [doc for doc in tied if doc["_id"] < entry_id]
    if not under:
        under = (await newest(log, query, "at", count=1, before=at, oldest=edge)).docs
    if not under:
        return floor - 1
    newest_under = max(under, key=lambda doc: doc["_id"])
    return int(newest_under[number]) if number in newest_under else None


async def with_ties(log: AsyncCollection[Any], query: dict[str, Any], docs: list[Any],
                    count: int) -> list[Any]:
    """A full page of `count` and the rest of its last entry's millisecond, when the entry
    that follows it (`docs[count]`) shares it: the next page asks for entries strictly
    before that time, which would skip them."""
    page = docs[:count]
    if len(docs) > count and docs[count]["at"] == page[-1]["at"]:
        last = page[-1]
        # One millisecond's entries, on the index; the `_id` bound is applied here (a filter
        # field outside the index would make SecantusDB scan the whole log).
        tied = log.find({**query, "at": last["at"]}).sort("_id", -1)
        page += [doc async for doc in tied if doc["_id"] < last["_id"]][:count]
    return page

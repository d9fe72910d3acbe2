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
2. the *numbered* part, from the scope's first numbered entry (its counter's `since`) up to
   the horizon: ranges of numbers on (scope, number) (`common.numbered`), which hold at most
   as many entries as they are wide however the entries arrived;
3. the *old* part, entries older than the scope's first numbered one (written before numbers
   existed): time windows again.

A position `below` is exclusive in that order: `(at, "")` is the API's `before` (every entry
stamped before `at`), `(at, id)` the console's cursor (the entries after that one). Where the
log is not numbered at all (no numbering round has run: `audit.enabled` off everywhere) or the
scope has no numbered entry, the caller's time windows read it, as before numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.services.common.newest import FIRST_WINDOW, newest
from vaultd.services.common.numbered import newest_numbered
from vaultd.timefmt import utcnow

HORIZON = "access_log:horizon"  # number_counters: every entry stamped before it is numbered
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
    kind: str  # its counter's name: access_log:<kind>:<value>

    def counter(self, value: str) -> str:
        return f"access_log:{self.kind}:{value}"


FILE = LogScope("fileId", "fileSeq", "file")
ACCOUNT = LogScope("accountId", "accountSeq", "account")
ROOM = LogScope("roomId", "roomSeq", "room")
SCOPES = (FILE, ACCOUNT, ROOM)


async def newest_entries(db: Db, scope: LogScope, value: str, *, count: int, oldest: datetime,
                         below: Position | None = None) -> list[Any] | None:
    """Up to `count + 1` entries of the scope, newest first (the one past `count` tells the
    caller what follows), below `below` and at or after `oldest`; None where the scope is not
    numbered, for the caller's time windows."""
    key = scope.counter(value)
    found = {doc["_id"]: doc async for doc in
             db.number_counters.find({"_id": {"$in": [HORIZON, key]}})}
    state, counter = found.get(HORIZON), found.get(key)
    if state is None or counter is None or "since" not in counter:
        return None
    horizon, since = state.get("horizon"), counter["since"]
    if horizon is None:
        return None
    log = db.raw(db.access_log.name)
    query = {scope.field: value}
    wanted = count + 1
    out: list[Any] = []
    if below is None or below[0] >= horizon:
        out += await by_time(log, query, wanted, below, max(horizon, oldest))
    if len(out) < wanted and since < horizon and (below is None or below[0] >= since):
        edge = below if below is not None and below[0] < horizon else None
        upper = (int(counter.get("seq", 0)) if edge is None
                 else await _number_below(log, query, scope.number, edge, since))
        if upper is None:  # no number to start from (an entry written around the fence)
            out += await by_time(log, query, wanted - len(out), edge, max(since, oldest))
        else:
            out += await _by_number(log, query, scope.number, wanted - len(out), upper,
                                    horizon, below)
    # Below the scope's first number, or the horizon where a round that died first gave it.
    first_numbered: Position = (min(since, horizon), "")
    if len(out) < wanted and oldest < first_numbered[0]:
        old_edge = min(below, first_numbered) if below is not None else first_numbered
        out += await by_time(log, query, wanted - len(out), old_edge, oldest)
    return out[:wanted]


async def by_time(log: AsyncCollection[Any], query: dict[str, Any], count: int,
                  below: Position | None, oldest: datetime) -> list[Any]:
    """Up to `count` entries of `query` below `below`, at or after `oldest`, newest first, by
    time windows: the rest of `below`'s millisecond (few entries), then strictly before it."""
    docs: list[Any] = []
    before = below[0] if below is not None else None
    if below is not None and below[1]:
        tied = await log.find({**query, "at": below[0]}).to_list()
        docs = sorted((doc for doc in tied if doc["_id"] < below[1]),
                      key=lambda doc: doc["_id"], reverse=True)[:count]
    if len(docs) < count and (before is None or before > oldest):
        latest = before or utcnow() + CLOCK_SLACK
        page = await newest(log, query, "at", count=count - len(docs), before=before,
                            oldest=oldest, latest=latest,
                            first_window=max(min(latest - oldest, TAIL_WINDOW), FIRST_WINDOW))
        docs += page.docs
    return docs


async def _number_below(log: AsyncCollection[Any], query: dict[str, Any], number: str,
                        below: Position, since: datetime) -> int | None:
    """The highest number among the entries below `below` (0: none), from the entries of its
    millisecond (a page's last entry and its ties: read by equality, few), else from the
    newest entry before it (a time typed by hand: time windows back from it)."""
    at, entry_id = below
    tied = await log.find({**query, "at": at}).to_list()
    above = [doc[number] for doc in tied if doc["_id"] >= entry_id and number in doc]
    if above:
        return int(min(above)) - 1
    under = [doc for doc in tied if doc["_id"] < entry_id]
    if not under:
        under = (await newest(log, query, "at", count=1, before=at, oldest=since)).docs
    if not under:
        return 0
    newest_under = max(under, key=lambda doc: doc["_id"])
    return int(newest_under[number]) if number in newest_under else None


async def _by_number(log: AsyncCollection[Any], query: dict[str, Any], number: str, count: int,
                     upper: int, horizon: datetime, below: Position | None) -> list[Any]:
    """Up to `count` numbered entries from `upper` down, stamped before the horizon (a round
    that has not moved it yet, or died before, numbered some after it: the tail has them)."""
    out: list[Any] = []
    while len(out) < count and upper >= 1:
        docs = await newest_numbered(log, query, number, count=count - len(out), top=upper,
                                     floor=1)
        if not docs:
            break
        upper = int(docs[-1][number]) - 1
        out += [doc for doc in docs if doc["at"] < horizon
                and (below is None or (doc["at"], doc["_id"]) < below)]
    return out


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

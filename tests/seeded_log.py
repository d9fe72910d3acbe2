"""An account's access log written straight into the database, numbered as vaultd numbers its
own (`tests.scale_seed`, `bench.scale_shape_log`).

vaultd numbers an entry in its file, account and room, and in each one's log of the entry's
action, after the insert, in the audit sequencer's round (`services.common.log_numbering`);
entries older than the rounds are numbered by a walk back in time (`older_log_numbering`), which
the seeding marks done, having numbered them all: every entry takes its number in each scope
in the log's order (time to the millisecond, then `_id`), 1 up, and each scope's counter its
last number and its first entry's time (`since`). Numbers are vaultd's only for what lies
behind the numbering horizon, so the entries are written once the live horizon has passed the
newest of them (a round would number again what lies past it; the seeding never moves the
horizon itself), and never into an account whose log already holds entries (their numbers
would have to be given again after the older seeded ones).

Entries a tool writes with older times and no numbers are read otherwise: the first read of
their scope walks them (`services.common.numbered_log`, the old part). A seeded year of a
vault's own log is not that, so it is written numbered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from typing import Any

from tests.waiting import wait_until_async
from vaultd.db import Db
from vaultd.services.common import numbered_log, older_log_numbering

HORIZON_WAIT = 120.0  # seconds for the live numbering horizon to pass the seeded log
# How the caller inserts a collection's documents (in batches, or loaded with its indexes).
Insert = Callable[[str, Iterable[dict[str, Any]]], Awaitable[Any]]


async def write_log(db: Db, account_id: str, log: list[dict[str, Any]], insert: Insert) -> None:
    """The account's whole log, numbered in each scope, and the scopes' counters."""
    if await db.raw("access_log").find_one({"accountId": account_id}, {"_id": 1}):
        raise RuntimeError("the account's log already has entries: its numbers would not be "
                           "vaultd's (seed before anything writes to it)")
    counters = numbered(log)
    if log:
        await horizon_past(db, log[-1]["at"])
    await insert("access_log", log)
    await insert("number_counters", ({"_id": key, "seq": seq, "since": since}
                                     for key, (seq, since) in counters.items()))
    if log:  # numbered whole, per action too: the walk of older entries has nothing to do
        await db.number_counters.update_one({"_id": numbered_log.HORIZON}, {
            "$min": {"actionsFrom": log[0]["at"]}, "$set": {"back": older_log_numbering.EPOCH}})


def numbered(entries: list[dict[str, Any]]) -> dict[str, tuple[int, datetime]]:
    """Puts `entries` in the log's order (times cut to the database's milliseconds) and gives
    each its numbers in its file, account and room; each scope's counter: (last number, first
    entry's time)."""
    for entry in entries:
        entry["at"] = entry["at"].replace(microsecond=entry["at"].microsecond // 1000 * 1000)
    entries.sort(key=lambda entry: (entry["at"], entry["_id"]))
    counters: dict[str, tuple[int, datetime]] = {}
    for entry in entries:
        for scope in numbered_log.ALL_SCOPES:
            key = scope.key_of(entry)
            if key is not None:
                last, since = counters.get(key, (0, entry["at"]))
                entry[scope.number] = last + 1
                counters[key] = (last + 1, since)
    return counters


async def horizon_past(db: Db, moment: datetime) -> None:
    """Waits for the numbering horizon (moved by the audit sequencer's rounds) to pass
    `moment`; with vaultd stopped, checks that it has."""
    async def passed() -> bool:
        state = await db.number_counters.find_one({"_id": numbered_log.HORIZON})
        return state is not None and state.get("horizon") is not None \
            and state["horizon"] > moment
    await wait_until_async(passed, timeout=HORIZON_WAIT, interval=0.5,
                           what="the numbering horizon past the seeded log")

"""A number per activity event in its account, so that the activity log is read newest first by
number ranges (`services.common.numbered`): a page reads what it returns whatever the events'
times (a burst of 10^4 events in a minute, then a quiet year, reads as cheaply as an even log).

The number is taken from the account's counter (`common.counters`, one `$inc`; the writer
touches no record of the account, and the account's record is read by every request, so a
document of its own keeps the two apart) just before the event is inserted: the insert itself
stays one command (`log_fence`), and a write that fails after the `$inc` leaves a gap, which the
ranges step over. Events written before numbers existed are numbered once at start-up
(`number_activity_once`), 0 and down below the first new one, the counter keeping the lowest as
its `floor`, as `db_indexes.number_files_once` does for files.

Each event takes a second number too, among its account's events of its action (`actionSeq`,
counter `activity:<account>:<action>`), so that one action's pages (the console's Activity
page filtered by it) are read by ranges as well; both counters are raised together
(`next_numbers`): two `findAndModify` per event, sent at once, and one counter document per
action an account has used. Events written before are numbered once at start-up by action
(`number_actions_once`) as above.

A page's cursor stays the last entry's time and id (docs/api.md): the next page starts below
that entry's number, read by its id. A cursor naming no entry of the account (one typed by
hand, or whose entry was deleted since) starts below the newest entry older than its time.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import get_args

from vaultd.db import Db
from vaultd.records.members import ActivityAction
from vaultd.services.common import counters
from vaultd.services.common.newest import newest
from vaultd.services.common.numbered import number_unnumbered
from vaultd.timefmt import utcnow

ACTIVITY_NUMBER_MIGRATION = "activitySeq"
ACTION_NUMBER_MIGRATION = "activityActionSeq"
FIELD = "seq"
ACTION_FIELD = "actionSeq"  # the event's number among its account's events of its action
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)  # the log holds nothing older than the service
CLOCK_SLACK = timedelta(minutes=1)  # entries are stamped by each process's clock


def scope(account_id: str) -> str:
    """The account's counter (`common.counters`)."""
    return f"activity:{account_id}"


def action_scope(account_id: str, action: str) -> str:
    """The counter of the account's events of one action (`common.counters`)."""
    return f"activity:{account_id}:{action}"


def _scope(account_id: str, action: str | None) -> str:
    return scope(account_id) if action is None else action_scope(account_id, action)


async def next_number(db: Db, account_id: str) -> int:
    """The number of the account's next event."""
    return await counters.next_number(db, scope(account_id))


async def next_numbers(db: Db, account_id: str, action: str) -> tuple[int, int]:
    """The numbers of the account's next event, among all its events and among its action's:
    two `findAndModify`, sent together."""
    numbers = await asyncio.gather(counters.next_number(db, scope(account_id)),
                                   counters.next_number(db, action_scope(account_id, action)))
    return numbers[0], numbers[1]


async def bounds(db: Db, account_id: str, action: str | None = None) -> tuple[int, int]:
    """(top, floor): the last number given and the lowest any event has, among the account's
    events or, with `action`, among its events of that action."""
    return await counters.bounds(db, _scope(account_id, action))


async def number_below(db: Db, account_id: str, at: datetime, entry_id: str,
                       floor: int, action: str | None = None) -> int:
    """The highest number a page after the cursor (`at`, `entry_id`) may hold: below the
    cursor's entry, read by its id; for a cursor naming no entry of the account (or of
    `action`), the newest entry before it in time (the rest of its millisecond with ids below
    its id, then older). Numbers among `action`'s events when it is given."""
    events = db.raw(db.activity.name)
    field = FIELD if action is None else ACTION_FIELD
    # By `_id` alone: with the account in the filter the embedded database may choose the
    # account's index and walk its whole log (tests/test_activity_pages.py counts it).
    named = await events.find_one({"_id": entry_id}, {field: 1, "accountId": 1, "action": 1})
    if named is not None and named["accountId"] == account_id and field in named \
            and action in (None, named["action"]):
        return int(named[field]) - 1
    query = {"accountId": account_id} if action is None else {"accountId": account_id,
                                                               "action": action}
    same = await events.find({**query, "at": at, "_id": {"$lt": entry_id}}, {field: 1}).to_list()
    latest = utcnow() + CLOCK_SLACK
    older = await newest(events, query, "at", count=1, oldest=EPOCH, before=min(at, latest),
                         latest=latest, fields=(field,))
    numbers = [int(doc[field]) for doc in [*same, *older.docs] if field in doc]
    return max(numbers) if numbers else floor - 1


async def number_activity_once(db: Db) -> None:
    """Events written before they were numbered get numbers below their account's first new
    one (newest 0, then -1, -2... by time and id, the order pages had), and the account the
    lowest as `activitySeqFloor`; a marker in `migrations` keeps later start-ups from looking
    again. Events of accounts that no longer exist are read by no one and left as they are."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": ACTIVITY_NUMBER_MIGRATION}) is not None:
        return
    async for account in db.raw(db.accounts.name).find({}, {"_id": 1}):
        await number_account_activity(db, account["_id"])
    await marks.update_one({"_id": ACTIVITY_NUMBER_MIGRATION},
                           {"$set": {"at": datetime.now(UTC)}}, upsert=True)


async def number_account_activity(db: Db, account_id: str) -> None:
    """Numbers one account's unnumbered events (see `number_activity_once`)."""
    lowest = await number_unnumbered(db.raw(db.activity.name), {"accountId": account_id}, "at",
                                     FIELD)
    if lowest is not None:
        await counters.lower_floor(db, scope(account_id), lowest)


async def number_actions_once(db: Db) -> None:
    """Events written before they were numbered among their action's get numbers below the
    first new one (newest 0, then -1... by time and id), and the action's counter the lowest
    as `floor`; a marker in `migrations` keeps later start-ups from looking again."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": ACTION_NUMBER_MIGRATION}) is not None:
        return
    async for account in db.raw(db.accounts.name).find({}, {"_id": 1}):
        for action in get_args(ActivityAction):
            await number_action_activity(db, account["_id"], action)
    await marks.update_one({"_id": ACTION_NUMBER_MIGRATION},
                           {"$set": {"at": datetime.now(UTC)}}, upsert=True)


async def number_action_activity(db: Db, account_id: str, action: str) -> None:
    """Numbers one account's unnumbered events of `action` (see `number_actions_once`). One
    look for any event of the action first: an action the account never did costs one read,
    not the time windows' walk back to the epoch."""
    events, query = db.raw(db.activity.name), {"accountId": account_id, "action": action}
    if await events.find_one(query, {"_id": 1}) is None:
        return
    lowest = await number_unnumbered(events, query, "at", ACTION_FIELD)
    if lowest is not None:
        await counters.lower_floor(db, action_scope(account_id, action), lowest)

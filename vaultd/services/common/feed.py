"""An account's log read a page at a time, newest first, optionally one action only: the
console's Activity page reads its files' actions (`access_log`) through it (`log_page`: the
log, whole or of one action, by the entries' numbers in the account, `common.numbered_log`,
where they have them);
the account's own actions, all or one action's, are read by their numbers
(`members.activity.page`).

Each page is time windows on an index of (accountId[, action], at) (`common.newest`), so it
costs what it returns however long the log: 10^6 entries behind a page are never read. The
cursor is the last entry's time and id; the next page is the rest of that millisecond (few
entries), then the entries strictly before it."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from pymongo.asynchronous.collection import AsyncCollection

from vaultd.db import Db
from vaultd.errors import InvalidRequest
from vaultd.records import AccessLogDoc
from vaultd.services.common import numbered_log
from vaultd.services.common.access_log import entry_json
from vaultd.services.common.newest import newest
from vaultd.services.common.numbered import MAX_READ
from vaultd.timefmt import utcnow

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
CLOCK_SLACK = timedelta(minutes=1)
BAD_CURSOR = "cursor is not one this page gave"
# Entries a page of `export` returns: what it holds in memory, and its reads' size (a range of
# numbers as wide as `numbered.MAX_READ`, about 10 ms on the embedded database; 500 took 27).
EXPORT_PAGE = MAX_READ


@dataclass(frozen=True)
class Cursor:
    at: datetime
    id: str

    def encode(self) -> str:
        raw = f"{int(self.at.timestamp() * 1000)}:{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            millis, _, entry_id = raw.partition(":")
            at = datetime.fromtimestamp(int(millis) / 1000, tz=UTC)
        except (ValueError, binascii.Error, UnicodeDecodeError, OverflowError, OSError):
            raise InvalidRequest(BAD_CURSOR) from None
        if not entry_id or len(entry_id) > 64:
            raise InvalidRequest(BAD_CURSOR)
        return cls(at, entry_id)


@dataclass(frozen=True)
class FeedPage:
    entries: list[dict[str, Any]]
    next: Cursor | None


async def page(records: AsyncCollection[Any], account_id: str, *, per_page: int,
               action: str | None = None, after: Cursor | None = None) -> FeedPage:
    query: dict[str, Any] = {"accountId": account_id}
    if action is not None:
        query["action"] = action
    found: list[dict[str, Any]] = []
    if after is not None:
        same = records.find({**query, "at": after.at})
        found = sorted([doc async for doc in same if doc["_id"] < after.id],
                       key=lambda doc: doc["_id"], reverse=True)[:per_page + 1]
    if len(found) <= per_page:
        older = await newest(records, query, "at", count=per_page + 1 - len(found),
                             oldest=EPOCH, before=after.at if after else None,
                             latest=utcnow() + CLOCK_SLACK)
        found += older.docs
    more = len(found) > per_page
    found = found[:per_page]
    last = found[-1] if found and more else None
    return FeedPage(found, Cursor(last["at"], last["_id"]) if last else None)


async def log_page(db: Db, account_id: str, *, per_page: int, action: str | None = None,
                   after: Cursor | None = None) -> FeedPage:
    """A page of the account's access log (its files' actions), whole or of one action, by the
    entries' numbers in the account where they have them, else by time windows (`page`)."""
    found = await numbered_log.newest_entries(
        db, numbered_log.ACCOUNT, account_id, count=per_page, oldest=EPOCH,
        below=(after.at, after.id) if after is not None else None, action=action)
    if found is not None:
        shown = found[:per_page]
        last = shown[-1] if len(found) > per_page else None
        return FeedPage(shown, Cursor(last["at"], last["_id"]) if last else None)
    return await page(db.raw(db.access_log.name), account_id, per_page=per_page, action=action,
                      after=after)


async def export(db: Db, account_id: str) -> AsyncIterator[dict[str, Any]]:
    """Every entry of an account's access log (its deleted files' too), newest first, as the
    spec's fields (`access_log.entry_json`): read a page at a time as the console's Activity
    page reads it (`log_page`), so memory holds one page and no read holds the database longer
    than a page does. One `find` sorted by time read the whole log before its first batch
    (20,000 entries: one operation of 298 ms, which every other request waited behind)."""
    after: Cursor | None = None
    while True:
        found = await log_page(db, account_id, per_page=EXPORT_PAGE, after=after)
        for doc in found.entries:
            yield entry_json(cast("AccessLogDoc", doc))
        if found.next is None:
            return
        after = found.next

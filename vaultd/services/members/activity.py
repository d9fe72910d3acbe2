"""The account activity log: who did what to the account itself (members, keys, webhooks,
branding, sign-in), newest first. File actions are the access log's (services.common.access_log).

One writer (`record`) and one reader (`page`). Each event has a number in its account and one
among its account's events of its action (`activity_numbers`), and pages are read by ranges of
numbers on the index (accountId, seq), or (accountId, action, actionSeq) for one action,
through `common.numbered`, because the embedded database does not push `limit` down: a page
costs what it returns, however long the log and however its events arrived (time windows read
a whole burst). A page ends with a cursor, the last entry's time and id: the next page is
everything numbered below that entry, so entries sharing a millisecond are neither skipped nor
repeated.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

from vaultd.db import Db
from vaultd.errors import InvalidRequest
from vaultd.records.members import ActivityAction, ActivityDoc, ActorRecord
from vaultd.services.common import log_fence
from vaultd.services.common.access_log import valid_ip
from vaultd.services.common.numbered import newest_numbered
from vaultd.services.members import activity_numbers
from vaultd.services.members.actor import Actor
from vaultd.timefmt import iso_utc, utcnow

ACTIONS: frozenset[str] = frozenset(get_args(ActivityAction))
PER_PAGE, MAX_PER_PAGE = 50, 200
DETAIL_VALUE_CHARS = 200  # a detail is a few short values, never a body
UNIX = datetime(1970, 1, 1, tzinfo=UTC)
# A page's cursor: its last entry's time (14 digits of milliseconds reach the year 5138, within
# what a datetime holds) and id (a UUID's hex).
CURSOR = re.compile(r"[0-9]{1,14}\.[0-9a-f]{1,64}")
# What an entry shows, in the export's column order.
FIELDS = ("at", "action", "actorKind", "actorId", "actorLabel", "target", "detail", "ip")


async def record(db: Db, actor: Actor, action: str, *, target: str | None = None,
                 detail: Mapping[str, str] | None = None, ip: str | None = None) -> None:
    """Append one entry for `actor`'s account. `action` is one of ACTIONS (a programming
    error otherwise: the set is closed); `detail` holds short text values only, never a
    secret (a key, a code, a session id)."""
    await record_for(db, actor.account_id, {"kind": actor.kind, "id": actor.id,
                                            "label": actor.label},
                     action, target=target, detail=detail, ip=ip)


def member_record(member_id: str, email: str) -> ActorRecord:
    """A person named by their member record in one account: the actor of a sign-in, which
    comes before any `Actor` (a role is only held once an account is chosen)."""
    return {"kind": "member", "id": member_id, "label": email}


async def record_for(db: Db, account_id: str, actor: ActorRecord, action: str, *,
                     target: str | None = None, detail: Mapping[str, str] | None = None,
                     ip: str | None = None) -> None:
    """`record`, for an actor given as its stored form (a sign-in's member)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown activity action {action!r}")
    number, action_number = await activity_numbers.next_numbers(db, account_id, action)
    entry: ActivityDoc = {
        "_id": uuid.uuid4().hex,
        "accountId": account_id,
        "at": utcnow(),
        "actor": {"kind": actor["kind"], "id": actor["id"], "label": actor["label"]},
        "action": action,  # type: ignore[typeddict-item]  # checked against ACTIONS above
        "seq": number,
        "actionSeq": action_number,
    }
    if target is not None:
        entry["target"] = target
    if detail:
        entry["detail"] = {str(k): str(v)[:DETAIL_VALUE_CHARS] for k, v in detail.items()}
    address = valid_ip(ip)
    if address is not None:
        entry["ip"] = address
    await log_fence.insert(db, "activity", entry)  # one command: see log_fence


@dataclass(frozen=True)
class Cursor:
    """Where a page ended: its last entry's time and id (exclusive)."""

    at: datetime
    id: str

    def encode(self) -> str:
        """`<milliseconds since 1970>.<id>`: every string of that shape is a valid cursor."""
        return f"{(self.at - UNIX) // timedelta(milliseconds=1)}.{self.id}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        if not CURSOR.fullmatch(text):
            raise InvalidRequest("cursor is not one this service returned")
        millis, entry_id = text.split(".", 1)
        return cls(UNIX + timedelta(milliseconds=int(millis)), entry_id)


@dataclass(frozen=True)
class Page:
    entries: list[ActivityDoc]
    next: Cursor | None  # None: this page holds the oldest entry


def parse_per_page(value: str | None) -> int:
    if value is None:
        return PER_PAGE
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
    if not (value.isascii() and value.isdigit()) or len(value) > 9 \
            or not 1 <= int(value) <= MAX_PER_PAGE:
        raise InvalidRequest(f"perPage must be an integer from 1 to {MAX_PER_PAGE}")
    return int(value)


async def page(db: Db, account_id: str, *, per_page: int = PER_PAGE,
               after: Cursor | None = None, action: str | None = None) -> Page:
    """Up to `per_page` entries, newest first, older than `after` (a previous page's cursor);
    with `action`, that action's only, by their numbers among it (`actionSeq`)."""
    top, floor = await activity_numbers.bounds(db, account_id, action)
    if after is not None:
        top = min(top, await activity_numbers.number_below(db, account_id, after.at, after.id,
                                                           floor, action))
    query, field = ({"accountId": account_id}, "seq") if action is None else (
        {"accountId": account_id, "action": action}, "actionSeq")
    found = await newest_numbered(db.activity, query, field,
                                  count=per_page + 1, top=top, floor=floor)
    more = len(found) > per_page
    found = found[:per_page]
    last = found[-1] if found and more else None
    return Page(found, Cursor(last["at"], last["_id"]) if last else None)


def entry_json(doc: ActivityDoc) -> dict[str, Any]:
    out: dict[str, Any] = {"id": doc["_id"], "at": iso_utc(doc["at"]), "action": doc["action"],
                           "actor": dict(doc["actor"])}
    for name in ("target", "detail", "ip"):
        if name in doc:
            out[name] = doc[name]
    return out


def entry_row(doc: ActivityDoc) -> dict[str, str]:
    """An entry as one flat row (the csv export): the detail as `name=value; ...`."""
    detail = doc.get("detail") or {}
    return {"at": iso_utc(doc["at"]), "action": doc["action"], "actorKind": doc["actor"]["kind"],
            "actorId": doc["actor"]["id"], "actorLabel": doc["actor"]["label"],
            "target": doc.get("target", ""),
            "detail": "; ".join(f"{k}={v}" for k, v in sorted(detail.items())),
            "ip": doc.get("ip", "")}

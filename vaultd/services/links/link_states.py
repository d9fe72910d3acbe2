"""A file's links by state (`GET /v1/files/:id/views?state=`), newest first by number, each
page read by ranges whatever the links' count, with totals exact.

A link's state moves without a write to it: a revoke-all is one write of its file (the
generation, `services.accounts.link_generations`), and expiry is the clock. So:

- **The revoke-all's links by number.** The write that raises the generation
  (`revoke_jobs._raise_generation`) also notes the last number given to a link then
  (`linkRevokedTo`) and the file's link records then (`linkRevokedCount`). A link's number
  and its generation are read from the file in one write (`link_numbers.reserve`), and the
  raise is one write of that record, only if no number was given since it was read: so every
  link numbered up to `linkRevokedTo` is revoked, whatever its record still says, and every
  link numbered after it is of the current generation.
- **After it, each link says what it was last written as** (`listed`): `active` when made,
  `revoked` by its own revoke (or the revoke-all's marking), `expired` when spent (maxOpens).
  A state is then a range of numbers on `(fileId, listed, seq)`.
- **The clock.** Links listed active whose expiry passed (`lapsed`) are a range of
  `(fileId, listed, expiresAt)`: those that expired since they were last marked. A read shows
  them as expired, and marks them (`listed: expired`) in the background in short steps, so the
  next read walks only those that expired since. A page of the active walks the lapsed among
  the newest listed active: it asks for them at the share it found still active, and marks
  those it walked the same way. A read costs its page (a deep page its
  depth) and the links lapsed since the last marking, as a live count costs the links expired
  since its last sweep (`link_counts`).

Totals: active is the file's live count (`link_counts.file_live`, exact as links expire: a
spent link leaves it, `spent`); revoked is `linkRevokedCount` plus the links revoked one by one
since (`linkRevokedSince`, raised by that revoke, `counted_revoke`); expired is what remains of
the file's link records (`linkTotal`). Links written before `listed` existed are listed once at
start-up (`link_listed_once`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal, cast

from vaultd.db import Db
from vaultd.records import FileDoc, LinkDoc
from vaultd.services.accounts import link_counts, link_generations, link_shards
from vaultd.services.accounts.link_generations import is_generation
from vaultd.services.common import background
from vaultd.services.common.numbered import AIM, GROWTH, MAX_READ, in_one_batch, newest_numbered
from vaultd.services.links import link_numbers
from vaultd.timefmt import utcnow

State = Literal["active", "expired", "revoked"]
WRITE_BATCH = 5  # links per marking update, as a revoke-all's marking (`revoke_jobs`)
SPAN = MAX_READ  # the widest range of numbers one read of a state's links covers
# Files whose lapsed links this process is marking -> the links still to mark: a read while
# one is marking adds to its links, so none it found waits for a later read.
_marking: dict[str, set[str]] = {}


def revoked_to(file: FileDoc) -> int:
    """The last number of a link revoked with its file's last revoke-all (below the file's
    lowest number when there was none)."""
    _, _, floor = link_numbers.listing_bounds(file)
    return int(file.get("linkRevokedTo", floor - 1))


async def total_of(db: Db, file: FileDoc, state: State) -> int:
    """The file's links in `state`, now. The revoked are the file's counters alone; the others
    need the live count, which reads the links expired since its last sweep (a round trip)."""
    revoked = int(file.get("linkRevokedCount", 0)) + int(file.get("linkRevokedSince", 0))
    if state == "revoked":
        return revoked
    live = (await link_counts.files_live(db, [dict(file)]))[file["_id"]]
    if state == "active":
        return live
    total, _, _ = link_numbers.listing_bounds(file)
    return max(total - live - revoked, 0)


async def page_of(db: Db, file: FileDoc, state: State, page: int, per_page: int
                  ) -> tuple[list[LinkDoc], int]:
    """The page's links of `state`, newest first, and the file's total of them."""
    total = await total_of(db, file, state)
    wanted = min(page * per_page, total)
    if not wanted:
        return [], total
    if state == "revoked":
        docs = await _revoked(db, file, wanted)
    elif state == "active":
        docs = await _active(db, file, wanted, total)
    else:
        docs = await _expired(db, file, wanted, total)
    return docs[(page - 1) * per_page:wanted], total


async def _listed(db: Db, file: FileDoc, listed: State, count: int, top: int | None = None,
                  *, known: int | None = None, expected: int | None = None) -> list[LinkDoc]:
    """The newest `count` links listed as `listed` numbered after the last revoke-all (and up
    to `top`), by ranges of numbers on `(fileId, listed, seq)`.

    The file's numbers are shared by every state, so a state's links may lie below many of
    the others' (the expired below thousands of live ones): a range that comes back short is
    followed by a wider one, as `numbered.newest_numbered` widens across deleted records, but
    never wider than SPAN numbers, so that the range which reaches the state's links walks at
    most SPAN more than the page, and no single read is long. What the others' links cost is
    then a read of nothing per SPAN numbers, unless they are `known` to be few: at most SPAN
    links listed so (the count read from the file's counters) are read in one range. Where
    about `expected` of them lie up to `top` (a count that the listed may pass: the lapsed not
    marked yet), the first range is sized for their density, not for `count` alone: evenly
    sparse links take one range, not the three of widening from the page's size."""
    if top is None:
        _, top, _ = link_numbers.listing_bounds(file)
    floor = revoked_to(file) + 1
    query = {"fileId": file["_id"], "listed": listed}
    found: list[LinkDoc] = []
    upper, width = top, max(min(count, SPAN), 1)
    if expected:
        spread = math.ceil(count * (upper - floor + 1) / expected)
        width = max(min(spread, SPAN), width)
    if known is not None and known <= SPAN:
        width = upper - floor + 1
    while len(found) < count and upper >= floor:
        lower = max(upper - width + 1, floor)
        ranged = {**query, "seq": {"$gte": lower, "$lte": upper}}
        docs = await in_one_batch(db.links.find(ranged), upper - lower + 1)
        found += sorted(docs, key=lambda doc: int(doc["seq"]), reverse=True)
        width = _next_width(width, len(found), top - lower + 1, count - len(found))
        upper = lower - 1
    return found[:count]


def _next_width(width: int, found: int, spanned: int, wanted: int) -> int:
    """A range aimed at `wanted` more links at the density seen over the `spanned` numbers
    read so far, at most GROWTH times the last one and SPAN numbers."""
    if not found:
        return min(width * GROWTH, SPAN)
    aimed = math.ceil(wanted * spanned / found * AIM)
    return max(min(aimed, width * GROWTH, SPAN), 1)


async def _revoked(db: Db, file: FileDoc, wanted: int) -> list[LinkDoc]:
    """Those revoked one by one since the last revoke-all (all numbered above it), then the
    links it revoked, every number up to it."""
    revoked_since = int(file.get("linkRevokedSince", 0))
    since = await _listed(db, file, "revoked", min(wanted, revoked_since), known=revoked_since)
    if len(since) >= wanted:
        return since
    _, _, floor = link_numbers.listing_bounds(file)
    before = await newest_numbered(db.links, {"fileId": file["_id"]}, "seq",
                                   count=wanted - len(since), top=revoked_to(file), floor=floor)
    return since + before


async def _active(db: Db, file: FileDoc, wanted: int, live: int) -> list[LinkDoc]:
    """Listed active and not lapsed: read in rounds below the last one, each asking for what
    is still missing at the share of the listed that were still active so far (half of them
    lapsed: twice the missing), at most SPAN. The lapsed it walked are marked expired in the
    background, as an expired page marks them: the next read does not walk them again."""
    _, top, _ = link_numbers.listing_bounds(file)
    found: list[LinkDoc] = []
    lapsed: list[LinkDoc] = []
    now = utcnow()
    asked = wanted
    while len(found) < wanted:
        docs = await _listed(db, file, "active", asked, top, expected=live - len(found))
        if not docs:
            break
        found += [doc for doc in docs if _still_active(doc, now)]
        lapsed += [doc for doc in docs if not _still_active(doc, now)]
        top = int(docs[-1]["seq"]) - 1
        asked = _next_ask(wanted - len(found), len(found), len(found) + len(lapsed), asked)
    _mark_in_background(db, file["_id"], [link["_id"] for link in lapsed])
    return found[:wanted]


def _next_ask(missing: int, active: int, read: int, asked: int) -> int:
    """The listed links to read for `missing` more active ones, at the share of the `read`
    so far that were `active` (none yet: GROWTH times the last ask), at most SPAN."""
    if missing <= 0:
        return asked
    if not active:
        return min(asked * GROWTH, SPAN)
    return max(min(math.ceil(missing * read / active * AIM), SPAN), 1)


def _still_active(link: LinkDoc, now: datetime) -> bool:
    return link["expiresAt"] > now and not link.get("exhausted")


async def _expired(db: Db, file: FileDoc, wanted: int, total: int) -> list[LinkDoc]:
    """Listed expired, and the lapsed (listed active, expiry passed), merged by number."""
    current = await _lapsed(db, file, total)
    marked = await _listed(db, file, "expired", wanted, known=total - len(current))
    # By id: the marking may have listed some of the lapsed as expired in between.
    merged = {link["_id"]: link for link in [*current, *marked]}
    return sorted(merged.values(), key=lambda link: int(link["seq"]), reverse=True)[:wanted]


async def _lapsed(db: Db, file: FileDoc, expired: int) -> list[LinkDoc]:
    """The file's links listed active whose expiry passed, numbered after its last revoke-all
    (those before it are revoked, and its own marking lists them so); marked in the
    background. The range holds at most the file's `expired` links and those its last
    revoke-all took (not yet marked): per shard only when that can be many."""
    floor = revoked_to(file) + 1
    query = {"fileId": file["_id"], "listed": "active", "expiresAt": {"$lte": utcnow()}}
    found = await link_shards.read_range(db.links, file, query,
                                         at_most=expired + int(file.get("linkRevokedCount", 0)))
    lapsed = [cast(LinkDoc, link) for link in found if int(link.get("seq", floor - 1)) >= floor]
    _mark_in_background(db, file["_id"], [link["_id"] for link in lapsed])
    return lapsed


def _mark_in_background(db: Db, file_id: str, ids: list[str]) -> None:
    """`_mark_lapsed` of `ids`: by the file's marking if this process is marking it already."""
    if not ids:
        return
    pending = _marking.get(file_id)
    if pending is not None:
        pending.update(ids)
        return
    _marking[file_id] = set(ids)
    background.spawn(_mark_lapsed(db, file_id), "marking a file's lapsed links")


async def _mark_lapsed(db: Db, file_id: str) -> None:
    """`listed: expired` on the file's lapsed links to mark (`_marking`), WRITE_BATCH at a
    time, each step followed by a rest as long as it took, until none is left. Only links not
    revoked meanwhile: by `_id` and `revoked`, on the `(revoked, _id)` index. Not recorded: a
    process that stops leaves them lapsed, and the next read finds them again."""
    pending = _marking[file_id]
    try:
        while pending:
            # Any WRITE_BATCH of them, each taken in constant time: choosing them in order
            # would sort what is pending at every step, about 60 ms of the event loop a step
            # when 100,000 links lapsed together (`python -m bench.expiry_burst --bulk`).
            ids = [pending.pop() for _ in range(min(WRITE_BATCH, len(pending)))]
            started = time.monotonic()
            await db.links.update_many({"revoked": False, "_id": {"$in": ids}},
                                       {"$set": {"listed": "expired"}})
            await asyncio.sleep(time.monotonic() - started)
    finally:
        del _marking[file_id]


async def counted_revoke(db: Db, link: LinkDoc) -> None:
    """One link was revoked by itself: counted among the file's revoked, unless a revoke-all
    raised the file's generation since the link was read (its count took the link)."""
    await db.files.update_one(
        {"_id": link["fileId"],
         "linkGeneration": is_generation(link_generations.generation(link, "generation"))},
        {"$inc": {"linkRevokedSince": 1}})


async def spent(db: Db, link_id: str) -> None:
    """A file link's open beyond its maxOpens was refused: the link answers as expired from
    now on. Listed as expired, and out of the live counts if it was counted live (as a revoke
    of a live link is: `countedOut`)."""
    now = utcnow()
    live = await db.links.find_one_and_update(
        {"_id": link_id, "revoked": False, "exhausted": {"$ne": True},
         "expiresAt": {"$gt": now}},
        {"$set": {"exhausted": True, "listed": "expired", "countedOut": True}},
        {"fileId": 1, "accountId": 1, "generation": 1, "countedOut": 1})
    if live is not None and not live.get("countedOut"):
        await link_counts.revoked_in_generation(db, live, 1)
        return
    await db.links.update_one({"_id": link_id}, {"$set": {"exhausted": True}})


def listed_as(link: dict[str, Any], now: datetime) -> State:
    """What a link written before `listed` existed is listed as (its record's state)."""
    if link.get("revoked") is not False:
        return "revoked"
    return "expired" if link.get("exhausted") or link["expiresAt"] <= now else "active"


def ids_by_value(links: Iterable[dict[str, Any]], now: datetime) -> dict[State, list[str]]:
    grouped: dict[State, list[str]] = {}
    for link in links:
        grouped.setdefault(listed_as(link, now), []).append(link["_id"])
    return grouped

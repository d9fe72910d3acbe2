"""`POST /files/:id/revoke-views` in one bounded write, whatever the number of links: the file's
link generation is raised (`services.accounts.link_generations`), and every link of an older
one is revoked from that write on, in every process (each liveness read joins the generation).

The call:

1. reads the file's live count as a count read does (`link_counts.file_live_unswept`):
   that is the `revoked` it answers, exact, from the maintained counter;
2. holds the `view.revoked` event and records a job (`revoke_jobs`, `_id` = the batch id), so a
   crash from here on is finished by recovery;
3. raises the generation in one update of the file record, only if the file is still at the
   generation and count it read (a link created or revoked meanwhile: read again). The same
   update sets the file's count to 0, its sweep to now, and notes the revoke's time under
   `linkRevokes` (which links it took out of the counts: `link_generations.counted_out`);
4. takes the count from the account's (once: a marker per job on the account), logs `revoke`
   (one entry per job) and releases the event, then answers.

The link records are then brought up to date in the background, in short steps (`mark`): the
file's unrevoked links of the old generations, read in closed `_id` windows on
`(fileId, revoked, _id)` (`services.common.id_ranges`), updated `WRITE_BATCH` at a time by `_id`,
so that no single operation holds the database long. Then the job ends and the file's note goes.
If the process dies first, recovery (`resume_orphaned`) claims the job and finishes what its
record says: all of it if the generation was raised (the marking again in the background),
otherwise nothing (the held event is dropped). Only the job's owner settles or marks it, so
the account's marker (which keeps its count from being taken twice) can go when the job ends.

A room's revoke-all (`services.rooms.room_revokes`) is the same job of another kind (`Holder`):
the room record carries the generation, its count and its notes under the same field names,
its links (`room_links`, keyed by `roomId`) are marked by the same steps, and it writes no log
entry (a room's revoke-all never did). The room's count and its held event are the caller's
(`revoke_generation`'s `count` and `hold`): this layer knows no room.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.db_server_time import step_seconds
from vaultd.errors import ServiceUnavailable
from vaultd.services.accounts import link_counts, link_generations, link_shards
from vaultd.services.accounts.link_generations import FILE_FIELDS, is_generation
from vaultd.services.common import access_log, background, id_ranges, outbox
from vaultd.services.common.fair_share import UNPACED, Pace, PacedSteps
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import utcnow

# Links per read of the background steps. An update rewrites each link's entries in the links'
# indexes holding `revoked` or `listed` (7 of its 13), on SecantusDB under its
# one lock. So links are updated at most WRITE_BATCH at a time, fewer while steps are slow
# (`background.StepSize`: a checkpoint slows a run of steps; each timed by the database's own
# clock where it gives one, `vaultd.db_server_time`; measured in docs/performance.md).
BATCH = 50
WRITE_BATCH = 5
JOBS = "revoke_jobs"
# What the raise reads of the holder first: its count, its generation, its links' numbers.
HOLDER_FIELDS = {"linkCount": 1, "linkSeq": 1, **link_shards.FIELDS, **FILE_FIELDS}
# Reads of the holder's count before its update: each retry means one of its links was created
# or revoked in between, so more than a few means a storm of them.
ATTEMPTS = 8
BUSY = "the file's links are changing too fast to revoke; retry"


@dataclass(frozen=True)
class Holder:
    """What a job's links belong to: the record carrying their generation, count and notes
    (`records`, while `alive` matches it), their collection (`links`) and the field of a link
    naming its holder (`key`)."""

    kind: str
    records: str
    links: str
    key: str
    alive: dict[str, Any]
    busy: str
    logged: bool  # whether the revoke-all writes a `revoke` entry in the holder's log


FILE = Holder("file", "files", "links", "fileId", {"state": "stored"}, BUSY, logged=True)
ROOM = Holder("room", "rooms", "room_links", "roomId", {"state": {"$exists": False}},
              "the room's links are changing too fast to revoke; retry", logged=False)
# The holder's live links at `now`, from its record read with `linkCount` and FILE_FIELDS.
LiveCount = Callable[[Db, dict[str, Any], datetime], Awaitable[int]]
# The held event of a revoke-all: (db, account, holder id, count, job id, generation) -> ids.
HoldEvent = Callable[[Db, str, str, int, str, int], Awaitable[list[str]]]


def holder_of(job: dict[str, Any]) -> Holder:
    return ROOM if job.get("kind") == ROOM.kind else FILE  # jobs without a kind are files'


async def _file_live(db: Db, file: dict[str, Any], now: datetime) -> int:
    return await link_counts.file_live_unswept(db, file, now)


async def revoke_all(db: Db, account_id: str, file_id: str, owner: str,
                     pace: Pace = UNPACED) -> int:
    """Revoke the file's live links of this account; returns how many this call revoked. The
    link records are marked afterwards, in the background (`mark`)."""
    return await revoke_generation(db, FILE, account_id, file_id, owner, _file_live,
                                   webhook_events.file_links_revoking, pace)


async def revoke_generation(db: Db, holder: Holder, account_id: str, holder_id: str, owner: str,
                            count: LiveCount, hold: HoldEvent, pace: Pace = UNPACED) -> int:
    """Revoke the live links of the holder (a file or a room of this account) in one write;
    returns how many this call revoked (`count`'s answer). `hold` queues the event the raise
    releases."""
    for _ in range(ATTEMPTS):
        found = await db.raw(holder.records).find_one(
            {"_id": holder_id, "accountId": account_id, **holder.alive}, HOLDER_FIELDS)
        if found is None:
            return 0
        now = utcnow()
        live = await count(db, dict(found), now)
        if not live:
            return 0
        job = await _start(db, dict(found), account_id, live, now, owner, holder, hold)
        if await _raise_generation(db, dict(found), job):
            await settle(db, job)
            _in_background(db, job, pace)
            return live
        await outbox.discard(db, job["held"])
        await db.raw(JOBS).delete_one({"_id": job["_id"]})
        await PacedSteps(pace, account_id).next()
    raise ServiceUnavailable(holder.busy)


async def _start(db: Db, found: dict[str, Any], account_id: str, live: int, now: datetime,
                 owner: str, holder: Holder = FILE,
                 hold: HoldEvent = webhook_events.file_links_revoking) -> dict[str, Any]:
    batch = uuid.uuid4().hex
    generation = link_generations.generation(found)
    held = await hold(db, account_id, found["_id"], live, batch, generation)
    job = {"_id": batch, "accountId": account_id, holder.key: found["_id"], "owner": owner,
           "startedAt": now, "generation": generation, "count": live, "held": held}
    if holder is not FILE:
        job["kind"] = holder.kind
    await db.raw(JOBS).insert_one(job)
    return job


async def _raise_generation(db: Db, found: dict[str, Any], job: dict[str, Any]) -> bool:
    """The one write that revokes: only if the holder is as read (same generation, same count,
    same sweep), else False."""
    holder = holder_of(job)
    counted = found.get("linkCount") or {}
    swept = counted.get("sweptAt")
    numbered: dict[str, Any] = {}
    noted: dict[str, Any] = {}
    if holder is FILE:
        # Every link numbered up to now is revoked, so no number may be given in between
        # (`link_states`: the listing by state reads the revoked by number).
        numbered = {field: found.get(field, {"$exists": False})
                    for field in ("linkSeq", "linkTotal")}
        noted = {"linkRevokedTo": int(found.get("linkSeq", 0)),
                 "linkRevokedCount": int(found.get("linkTotal", 0)), "linkRevokedSince": 0}
    result = await db.raw(holder.records).update_one(
        {"_id": found["_id"], **holder.alive,
         "linkGeneration": is_generation(job["generation"]),
         "linkCount.live": int(counted.get("live", 0)),
         "linkCount.sweptAt": swept if swept is not None else {"$exists": False}, **numbered},
        {"$set": {"linkGeneration": job["generation"] + 1, "linkCount.live": 0,
                  "linkCount.sweptAt": job["startedAt"], **noted,
                  f"linkRevokes.{job['generation']}": {"at": job["startedAt"],
                                                       "batch": job["_id"]}}})
    return bool(result.modified_count)


async def settle(db: Db, job: dict[str, Any]) -> None:
    """After the generation was raised: the account's count, the log entry, the event. Each
    once, however often it is called (a resumed job calls it again)."""
    await db.accounts.update_one(
        {"_id": job["accountId"], f"linkCount.revokes.{job['_id']}": {"$exists": False}},
        {"$inc": {"linkCount.live": -job["count"]},
         "$set": {f"linkCount.revokes.{job['_id']}": True}})
    if holder_of(job).logged:
        with contextlib.suppress(DuplicateKeyError):  # one entry per job, resumed or not
            await access_log.record(db, job["accountId"], job["fileId"], "revoke",
                                    entry_id=f"revoke-{job['_id']}")
    await outbox.release(db, job["held"])


def _in_background(db: Db, job: dict[str, Any], pace: Pace) -> None:
    background.spawn(mark(db, job, pace), "marking a revoke-all's links")


def stop_marking() -> None:
    """Stop this process's background steps (their jobs stay recorded: recovery resumes them
    once this process is gone)."""
    background.stop()


async def all_marked() -> None:
    """Wait until this process's background steps are done."""
    await background.settled()


async def mark(db: Db, job: dict[str, Any], pace: Pace = UNPACED) -> int:
    """Write the revoke on the links it revoked, in short steps, each paced by the fair share
    (`pace`) and resting as long as it took; then end the job. Returns how many links were
    marked (idempotent: a resumed job marks what is left)."""
    revoked_at: datetime = job["startedAt"]
    holder = holder_of(job)
    records = db.raw(holder.links)
    steps = PacedSteps(pace, job["accountId"])
    fields = {"generation": 1, "expiresAt": 1}
    listed = {"listed": "revoked"} if holder is FILE else {}  # `link_states`
    step = background.StepSize(WRITE_BATCH)
    marked = 0
    async for links in id_ranges.batches(records, fields, size=BATCH,
                                         query={holder.key: job[holder.key], "revoked": False}):
        old = [link for link in links
               if link_generations.generation(link, "generation") <= job["generation"]]
        # Those live at the revoke left the counts with it; those expired before leave by the
        # expiry sweep, as every expired link does.
        for live in (True, False):
            ids = [link["_id"] for link in old if (link["expiresAt"] > revoked_at) is live]
            while ids:
                taken, ids = ids[:step.size], ids[step.size:]
                # By `_id` and `revoked` alone, on the (revoked, _id) index: a link's generation
                # never changes once written (`links.create_link` deletes one born of a revoked
                # generation and makes another), so those read as old stay old. A condition on
                # `generation` (in no index) made SecantusDB scan every link, each step.
                started = time.monotonic()
                result = await records.update_many(
                    {"revoked": False, "_id": {"$in": taken}},
                    {"$set": {"revoked": True, "countedOut": live, **listed}})
                marked += int(result.modified_count)
                took = time.monotonic() - started
                step.took(step_seconds(result.raw_result, took))
                # Nobody waits for these steps, every other tenant's query may wait behind
                # one: rest as long as each took, so they never queue back to back.
                await asyncio.sleep(took)
                await steps.next()
    await db.raw(JOBS).delete_one({"_id": job["_id"]})
    # Notes no longer needed: every link of the generation now says what the note said.
    await db.raw(holder.records).update_one(
        {"_id": job[holder.key]}, {"$unset": {f"linkRevokes.{job['generation']}": ""}})
    await db.accounts.update_one({"_id": job["accountId"]},
                                 {"$unset": {f"linkCount.revokes.{job['_id']}": ""}})
    return marked


async def resume_orphaned(db: Db, live_instances: set[str], owner: str) -> int:
    """Take over the jobs whose owner is gone; returns how many this call took. Each job is
    claimed first (its owner replaced by `owner`, a live instance, in one conditional update),
    so processes recovering at once never resume the same job twice, and the claimer's death
    orphans it again. The counts and the log are settled before this returns; the marking goes
    on in the background, as after a revoke-all, so a start-up never waits for it."""
    orphans = [job async for job in db.raw(JOBS).find({})
               if job["owner"] not in live_instances]
    resumed = 0
    for job in orphans:
        claimed = await db.raw(JOBS).find_one_and_update(
            {"_id": job["_id"], "owner": job["owner"]}, {"$set": {"owner": owner}},
            return_document=True)
        if claimed is not None:
            await resume(db, claimed)
            resumed += 1
    return resumed


async def resume(db: Db, job: dict[str, Any]) -> None:
    """A job left by a process that died: finished if it raised the generation, else dropped."""
    holder = holder_of(job)
    raised = await db.raw(holder.records).find_one(
        {"_id": job[holder.key], f"linkRevokes.{job['generation']}.batch": job["_id"]},
        {"_id": 1})
    if raised is None:
        await outbox.discard(db, job["held"])
        await db.raw(JOBS).delete_one({"_id": job["_id"]})
        return
    await settle(db, job)
    _in_background(db, job, UNPACED)

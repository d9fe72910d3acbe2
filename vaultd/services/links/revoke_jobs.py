"""`POST /files/:id/revoke-views` as a job that survives its process: revoke every live link of
a file in short batches, then announce once how many were revoked.

A job record (`revoke_jobs`, `_id` = the batch id written on each revoked link) is written
before the first batch, with its owner (the instance id) and the held webhook's message ids.
The count announced is what the links say: those carrying the batch id (an index read), so it
is right whatever point a crash interrupted. If the owner dies, recovery (`resume_orphaned`)
revokes the rest of the file's links live at the job's start with the same batch id, then
releases the held event with that count and ends the job. The outbox's own sweep of held
messages may release the event first (with the count expected at the start): either way one
message, with the same id, goes out.

No operation grows with the file's links: the links are read in closed `_id` windows of about
`BATCH` on `(fileId, revoked, _id)`, the count in windows on `(revokedBatch, _id)`
(`services.common.id_ranges`), and each update revokes at most `WRITE_BATCH` by `_id`, yielding
between them, so another tenant's requests get the database lock and the event loop in between.
A job started by a call is paced by its `Pace` (the fair share, `services.common.fair_share`):
while another account's pages are read, it pauses after each read and update in proportion to
the time they took.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.services.accounts import link_counts
from vaultd.services.common import access_log, id_ranges, outbox
from vaultd.services.common.fair_share import UNPACED, Pace, PacedSteps
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import utcnow

# Links per read. An update rewrites each link's entries in the links' five indexes holding
# `revoked` or `revokedBatch`: about 0.8 ms a link on SecantusDB, whose one lock the update
# holds (50 links: 36-42 ms, 10: 8 ms, measured 2026-11-26 with load 1). So links are updated
# WRITE_BATCH at a time: the longest another tenant's query waits behind one is about 8 ms.
BATCH = 50
WRITE_BATCH = 10
JOBS = "revoke_jobs"


async def revoke_all(db: Db, account_id: str, file_id: str, owner: str,
                     pace: Pace = UNPACED) -> int:
    """Revoke the file's live links of this account; returns how many this call revoked."""
    job = await start(db, account_id, file_id, owner, pace)
    if job is None:
        return 0
    return await finish(db, job, pace)


async def start(db: Db, account_id: str, file_id: str, owner: str,
                pace: Pace = UNPACED) -> dict[str, Any] | None:
    """The job, recorded with its held event, or None when the file has no live link."""
    started = utcnow()
    steps, expected = PacedSteps(pace, account_id), 0
    async for ids in _live_ids(db, account_id, file_id, started, started):
        expected += len(ids)
        await steps.next()
    if not expected:
        return None
    batch = uuid.uuid4().hex
    held = await webhook_events.file_links_revoking(db, account_id, file_id, expected, batch)
    job = {"_id": batch, "accountId": account_id, "fileId": file_id, "owner": owner,
           "startedAt": started, "held": held, "expected": expected}
    await db.raw(JOBS).insert_one(job)
    return job


async def finish(db: Db, job: dict[str, Any], pace: Pace = UNPACED) -> int:
    """Revoke what is left of the job, announce its count, end it (idempotent)."""
    steps = PacedSteps(pace, job["accountId"])
    async for ids in _live_ids(db, job["accountId"], job["fileId"], job["startedAt"], utcnow()):
        await revoke_batch(db, job, ids, steps)
    marked = id_ranges.batches(db.raw(db.links.name), {"_id": 1},
                               query={"revokedBatch": job["_id"]}, size=BATCH)
    revoked = sum([len(links) async for links in marked])
    if revoked == job["expected"]:
        await outbox.release(db, job["held"])
    else:  # some were revoked meanwhile by another caller: the held count is corrected
        await webhook_events.release_recounted(db, job["held"], job["accountId"],
                                               job["fileId"], revoked)
    if revoked:
        with contextlib.suppress(DuplicateKeyError):  # one entry per job, resumed or not
            await access_log.record(db, job["accountId"], job["fileId"], "revoke",
                                    entry_id=f"revoke-{job['_id']}")
    await db.raw(JOBS).delete_one({"_id": job["_id"]})
    return revoked


async def revoke_batch(db: Db, job: dict[str, Any], ids: list[str],
                       steps: PacedSteps | None = None) -> int:
    """Short updates on the `(revoked, _id)` index, WRITE_BATCH links each; their links leave
    the live counts with each update."""
    steps = steps or PacedSteps(UNPACED, job["accountId"])
    revoked = 0
    for first in range(0, len(ids), WRITE_BATCH):
        result = await db.links.update_many(
            {"revoked": False, "_id": {"$in": ids[first:first + WRITE_BATCH]}},
            {"$set": {"revoked": True, "revokedBatch": job["_id"], "countedOut": True}})
        await link_counts.revoked(db, job["accountId"], job["fileId"], result.modified_count)
        revoked += int(result.modified_count)
        await steps.next()  # others run meanwhile
    return revoked


async def resume_orphaned(db: Db, live_instances: set[str]) -> int:
    """Finish the jobs whose owner is gone; returns how many."""
    orphans = [job async for job in db.raw(JOBS).find({})
               if job["owner"] not in live_instances]
    for job in orphans:
        await finish(db, job)
    return len(orphans)


async def _live_ids(db: Db, account_id: str, file_id: str, started: datetime, now: datetime
                    ) -> AsyncIterator[list[str]]:
    """Links of the file live `now` and created by the job's start, window by window (none
    empty): the file's unrevoked links by `_id` range, the rest checked here."""
    fields = {"accountId": 1, "createdAt": 1, "expiresAt": 1}
    async for links in id_ranges.batches(db.raw(db.links.name), fields, size=BATCH,
                                         query={"fileId": file_id, "revoked": False}):
        ids = [link["_id"] for link in links if link["accountId"] == account_id
               and link["createdAt"] <= started and link["expiresAt"] > now]
        if ids:
            yield ids

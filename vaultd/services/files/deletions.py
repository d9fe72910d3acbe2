"""`DELETE /files/:id` in one bounded write, whatever the number of the file's links.

The call:

1. reads the file's live links as a count read does (`link_counts.file_live_unswept`): what
   the deletion takes from the account's count;
2. claims the file in one conditional update, only if it is as read (stored, same generation,
   same count, same sweep; else a link was created or revoked in between: read again). The
   update sets `state: deleting` (every liveness read joins the file: no page of its links is
   served from this write on, in any process: `link_generations.killed`), notes the count and
   the time (`liveLinksAtDelete`, `deletingAt`: `link_generations.counted_out` reads it), names
   its owner (`deleteOwner`, an instance id) and raises the file's link generation, so that a
   link being created meanwhile is never counted (`link_counts.added_in_generation`);
3. settles what a caller sees (`settle`): the file leaves its rooms (a file is in few), the
   usage and the account's live links are lowered (once: the account's `pendingDeletes`), the
   encrypted blob and renditions are deleted, the `delete` log entry (one per file) and the
   `file.deleted` event (one per file) are written. Then it answers 204.

What grows with the file's history goes afterwards, in the background (`clean_up`), in short
steps that rest as long as each took: the account's expiry sweep first (the file's links that
expired before the claim are still in its count until a sweep sees them), then the links and
their aggregates in closed `_id` windows, DELETE_BATCH per delete (`services.common.batches`),
then the record and the account's marker. If the owner dies first, recovery
(`resume_orphaned`) claims the file for itself and does it again from the start: every step
is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.errors import ServiceUnavailable
from vaultd.records import FileDoc
from vaultd.services.accounts import link_counts, link_generations, quota
from vaultd.services.accounts.link_generations import is_generation
from vaultd.services.common import access_log, background, id_ranges
from vaultd.services.common.batches import DELETE_BATCH, WINDOW
from vaultd.services.files import renditions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.files.files import get_file
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import utcnow

# Claims tried before giving up: each retry means a link of the file was created or revoked
# between the count's read and the claim, so more than a few means a storm of them.
ATTEMPTS = 8
BUSY = "the file's links are changing too fast to delete it; retry"
# Sweeps of the account tried before the file's links go (another process's sweep may win the
# write with an older `now`).
SWEEPS = 8

# The files this process is deleting: one whose clean-up stopped here (a database error) is
# taken over by this process's own next recovery, as a dead owner's would be.
_cleaning: set[str] = set()


async def delete_file(db: Db, store: BlobStore, account_id: str, file_id: str,
                      owner: str) -> None:
    """Claim the file and settle its deletion; its links, aggregates and record are removed
    afterwards in the background (`clean_up`), by `owner` or by recovery."""
    require_caller(Permission.CHANGE_CONTENT)
    for _ in range(ATTEMPTS):
        doc = dict(await get_file(db, account_id, file_id))  # with its count and generation
        now = utcnow()
        live = await link_counts.file_live_unswept(db, doc, now)
        claimed = await _claim(db, doc, live, now, owner)
        if claimed is not None:
            _cleaning.add(claimed["_id"])
            await _settle_then_clean_up(db, store, claimed)
            return
        await asyncio.sleep(0)
    raise ServiceUnavailable(BUSY)


async def _claim(db: Db, file: dict[str, Any], live: int, now: datetime,
                 owner: str) -> FileDoc | None:
    """The one write that deletes: only if the file is as read, else None."""
    counted = file.get("linkCount")
    query: dict[str, Any] = {
        "_id": file["_id"], "state": "stored",
        "linkGeneration": is_generation(link_generations.generation(file))}
    if counted is None:  # no link was ever counted: a link counted since adds the field
        query["linkCount"] = {"$exists": False}
    else:
        swept = counted.get("sweptAt")
        query["linkCount.live"] = int(counted.get("live", 0))
        query["linkCount.sweptAt"] = swept if swept is not None else {"$exists": False}
    return await db.files.find_one_and_update(
        query,
        {"$set": {"state": "deleting", "liveLinksAtDelete": live, "deletingAt": now,
                  "deleteOwner": owner,
                  "linkGeneration": link_generations.generation(file) + 1}},
        return_document=ReturnDocument.AFTER)


async def settle(db: Db, store: BlobStore, doc: FileDoc) -> None:
    """What the deletion's answer stands for: rooms, usage, counts, the encrypted blobs (one
    call each, whatever the file's history: the spec's "encrypted file removed" holds at the
    answer), log entry and event. Each once, however often it is called (a resumed deletion
    calls it again)."""
    account_id, file_id = doc["accountId"], doc["_id"]
    live = doc.get("liveLinksAtDelete")
    if live is None:  # claimed by a version that did not note it: its links are still there
        live = await link_counts.file_live(db, file_id)
    await _leave_rooms(db, file_id)
    await quota.release_file(db, account_id, file_id, int(doc["size"]), live)
    await store.backend.delete(doc["blob"]["name"])
    await renditions.delete(store, doc)
    with contextlib.suppress(DuplicateKeyError):  # one entry per file, resumed or not
        await access_log.record(db, account_id, file_id, "delete", entry_id=f"delete-{file_id}")
    await webhook_events.file_deleted(db, doc)


async def _leave_rooms(db: Db, file_id: str) -> None:
    """The file leaves every room, each room's item count lowered with it (a file is in few
    rooms: one item per room it was added to). Item by item, so a retry after a crash lowers
    each count once for the items it still finds."""
    while places := await db.room_items.find({"fileId": file_id}, {"roomId": 1}).to_list(100):
        for place in places:
            gone = await db.room_items.delete_one({"_id": place["_id"]})
            if gone.deleted_count:
                await db.rooms.update_one({"_id": place["roomId"], "itemCount": {"$exists": True}},
                                          {"$inc": {"itemCount": -1}})


async def _settle_then_clean_up(db: Db, store: BlobStore, doc: FileDoc) -> None:
    await background.settle_then_clean_up(doc["_id"], _cleaning, settle(db, store, doc),
                                          lambda: clean_up(db, doc), "cleaning up a deleted file")


async def clean_up(db: Db, doc: FileDoc) -> None:
    """Everything of a settled deletion that grows with the file's history, in short steps;
    the record goes last, so a crash before leaves it for recovery."""
    account_id, file_id = doc["accountId"], doc["_id"]
    await sweep_account(db, account_id, file_id, doc.get("deletingAt"))
    links = db.raw(db.links.name)
    # By `_id` windows on (fileId, revoked, _id); the last call finds a link of another shape.
    for revoked in (False, True):
        await delete_resting(links, {"fileId": file_id, "revoked": revoked})
    await delete_resting(links, {"fileId": file_id}, windows=False)
    await delete_resting(db.raw(db.link_stats.name), {"fileId": file_id})  # one per link
    # Its time per page across links (services.analytics.file_pages, a layer above this one).
    await db.raw("file_page_stats").delete_one({"_id": file_id})
    await db.files.delete_one({"_id": file_id})
    await quota.finish_release(db, account_id, file_id)


async def sweep_account(db: Db, account_id: str, file_id: str, deleted_at: datetime | None,
                        *, links: str = "links", key: str = "fileId") -> None:
    """The file's links that expired before its claim leave the account's count by its expiry
    sweep, which reads them: so a sweep past the claim runs before they are deleted. A room's
    deletion (`services.rooms.room_deletions`) names its links (`links`, by `key`)."""
    if deleted_at is None:  # claimed by a version that did not note it
        await link_counts.account_live(db, account_id)
        return
    for _ in range(SWEEPS):
        await link_counts.account_live(db, account_id)
        account = await db.accounts.find_one({"_id": account_id}, {"linkCount": 1})
        if account is None:
            return
        swept = account.get("linkCount", {}).get("sweptAt")
        if swept is not None and swept >= deleted_at:
            return
        # Not swept past the claim (nothing to sweep, or another sweep won with an older now):
        # done if none of the file's links is left in between.
        since = swept or link_counts.NEVER
        between = db.raw(links).find({key: file_id,
                                      "expiresAt": {"$gt": since, "$lte": deleted_at}},
                                     {"countedOut": 1})
        if not [link async for link in between if not link.get("countedOut")]:
            return


async def delete_resting(records: AsyncCollection[Any], query: dict[str, Any], *,
                          windows: bool = True) -> None:
    """Delete what `query` matches, DELETE_BATCH per delete by `_id`, each followed by a rest
    as long as it took: nobody waits for these steps, every other tenant's query may wait
    behind one. `windows`: read the ids in closed `_id` windows (`id_ranges`) on an index of
    `query`'s fields then `_id`; else at once (a query known to match few)."""
    if windows:
        async for found in id_ranges.batches(records, {"_id": 1}, query=query, size=WINDOW):
            await _delete_ids(records, [item["_id"] for item in found])
    else:
        await _delete_ids(records, [item["_id"] async for item in records.find(query, {"_id": 1})])


async def _delete_ids(records: AsyncCollection[Any], ids: list[Any]) -> None:
    for first in range(0, len(ids), DELETE_BATCH):
        started = time.monotonic()
        await records.delete_many({"_id": {"$in": ids[first:first + DELETE_BATCH]}})
        await asyncio.sleep(time.monotonic() - started)


async def resume_orphaned(db: Db, store: BlobStore, live_instances: set[str], owner: str,
                          stale_before: datetime) -> int:
    """Take over the deletions whose owner is gone, or is this process (`owner`) and no longer
    cleaning it up; returns how many this call took. Each is claimed first (its `deleteOwner`
    replaced by `owner` in one conditional update), so processes recovering at once never
    resume the same one twice. A deletion claimed by a version that named no owner is taken
    once its claim is older than `stale_before`. Settled before this returns; the clean-up
    goes on in the background."""
    resumed = 0
    deleting = db.files.find({"state": "deleting"}, {"deleteOwner": 1, "deletingAt": 1})
    for doc in [doc async for doc in deleting]:
        previous = doc.get("deleteOwner")
        if doc["_id"] in _cleaning:
            continue
        if previous in live_instances and previous != owner:
            continue
        if previous is None and doc.get("deletingAt", stale_before) >= stale_before:
            continue
        _cleaning.add(doc["_id"])  # before the claim: a concurrent recovery here skips it
        claimed = await db.files.find_one_and_update(
            {"_id": doc["_id"], "state": "deleting",
             "deleteOwner": previous if previous is not None else {"$exists": False}},
            {"$set": {"deleteOwner": owner}}, return_document=ReturnDocument.AFTER)
        if claimed is None:
            _cleaning.discard(doc["_id"])
            continue
        await _settle_then_clean_up(db, store, claimed)
        resumed += 1
    return resumed

"""The indexes vaultd's queries stand on, and the one-time fixes of records written before
one of them could exist: `ensure_indexes`, run at start-up by vaultd and by vault-admin."""

from __future__ import annotations

import itertools
import logging
from datetime import UTC, datetime

from pymongo import ASCENDING, DESCENDING, UpdateOne

from vaultd.db import (
    FILE_NUMBER_MIGRATION,
    GATE_COUNTERS,
    LINK_COUNT_MIGRATION,
    ROOM_COUNT_MIGRATION,
    WALKS,
    Db,
)
from vaultd.services.common.batches import EPOCH
from vaultd.services.common.newest import newest

log = logging.getLogger("vaultd.db")

async def ensure_indexes(db: Db) -> None:
    """Idempotent; run at start-up by vaultd and by vault-admin."""
    await db.api_keys.create_index([("hash", ASCENDING)], unique=True)
    await db.api_keys.create_index([("accountId", ASCENDING)])
    await db.api_keys.create_index([("accountId", ASCENDING), ("revokedAt", ASCENDING)])
    await db.files.create_index([("accountId", ASCENDING), ("createdAt", DESCENDING)])
    # SecantusDB uses an index only when it holds every field of the filter (equalities, then
    # one range): a field outside the index turns a query into a collection scan. Hence the
    # listing's index, and the `_id`-led pairs for conditional updates of one record.
    await db.files.create_index(
        [("accountId", ASCENDING), ("state", ASCENDING), ("createdAt", DESCENDING)])
    await db.files.create_index([("_id", ASCENDING), ("state", ASCENDING)])
    await db.files.create_index([("_id", ASCENDING), ("linkCount.sweptAt", ASCENDING)])
    await db.accounts.create_index([("_id", ASCENDING), ("linkCount.sweptAt", ASCENDING)])
    await db.files.create_index([("state", ASCENDING)])  # recovery looks for "deleting"
    await db.links.create_index([("hash", ASCENDING)], unique=True)
    await db.links.create_index([("fileId", ASCENDING), ("revoked", ASCENDING)])
    # A file's live links (revoke-all), and one link or a batch revoked only if still live.
    await db.links.create_index(
        [("fileId", ASCENDING), ("revoked", ASCENDING), ("expiresAt", ASCENDING)])
    await db.links.create_index([("revoked", ASCENDING), ("_id", ASCENDING)])
    # A revoke-all walks the file's unrevoked links, then counts its own, by `_id` windows.
    await db.links.create_index([("fileId", ASCENDING), ("revoked", ASCENDING), ("_id", ASCENDING)])
    await db.links.create_index([("revokedBatch", ASCENDING), ("_id", ASCENDING)])
    await db.links.create_index([("accountId", ASCENDING), ("expiresAt", ASCENDING)])
    # Links expired since the last sweep of a file's live count (services.accounts.link_counts).
    await db.links.create_index([("fileId", ASCENDING), ("expiresAt", ASCENDING)])
    await db.access_log.create_index([("fileId", ASCENDING), ("at", DESCENDING)])
    # The log filtered by action is a time range too (services.common.access_log,
    # services.common.newest).
    await db.access_log.create_index(
        [("fileId", ASCENDING), ("action", ASCENDING), ("at", DESCENDING)])
    await db.access_log.create_index([("accountId", ASCENDING), ("at", DESCENDING)])
    await _unique_render_ids(db)
    await db.link_stats.create_index([("fileId", ASCENDING)])
    await db.link_stats.create_index([("fileId", ASCENDING), ("_id", ASCENDING)])  # deletion
    # The activity report's conditional update of one link's aggregates (services.analytics).
    # Not (_id, completedAt): its update asks for completedAt None, which SecantusDB's index
    # does not match on a record without the field (a collection scan does).
    await db.link_stats.create_index([("_id", ASCENDING), ("totalSeconds", ASCENDING)])
    # One endpoint per (account, slot 0-9): the endpoint limit holds under concurrent creates.
    await _number_endpoints_without_slot(db)
    await db.webhook_endpoints.create_index(
        [("accountId", ASCENDING), ("slot", ASCENDING)], unique=True)
    await db.webhook_outbox.create_index([("state", ASCENDING), ("nextAttemptAt", ASCENDING)])
    await db.webhook_outbox.create_index([("state", ASCENDING), ("createdAt", ASCENDING)])
    await db.webhook_outbox.create_index([("state", ASCENDING), ("finishedAt", ASCENDING)])
    await db.webhook_deliveries.create_index([("endpointId", ASCENDING), ("at", DESCENDING)])
    await db.webhook_deliveries.create_index([("at", ASCENDING)])  # retention prunes by age
    await db.link_stats.create_index([("openAnnounced", ASCENDING)])
    await db.link_stats.create_index([("completeAnnounced", ASCENDING)])
    await db.viewer_sessions.create_index([("hash", ASCENDING)], unique=True)
    await db.viewer_sessions.create_index([("linkId", ASCENDING), ("createdAt", DESCENDING)])
    # A session ends with its link or after 24 h (`expiresAt`, the earlier): then the database
    # drops it (TTL), so sessions do not pile up; links keep their count (`sessionsOpened`).
    await db.viewer_sessions.create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await db.agreements.create_index([("accountId", ASCENDING), ("agreementId", ASCENDING),
                                      ("version", DESCENDING)])
    # A gate's rate window is worth nothing once over: the database drops it (TTL), so the
    # counters of a year of code sends do not stay behind.
    await db.raw(GATE_COUNTERS).create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await _room_indexes(db)
    await _member_indexes(db)
    await _audit_indexes(db)
    for name, (second, _prefix) in WALKS.items():
        await db.raw(name).create_index([("_id", ASCENDING), (second, ASCENDING)])
    await count_links_once(db)
    await count_rooms_once(db)
    # The listing reads a range of the files' numbers in their account (services.files.files).
    await db.files.create_index(
        [("accountId", ASCENDING), ("state", ASCENDING), ("seq", DESCENDING)])
    await number_files_once(db)


async def _room_indexes(db: Db) -> None:
    await db.rooms.create_index([("accountId", ASCENDING), ("createdAt", DESCENDING)])
    await db.room_items.create_index([("roomId", ASCENDING), ("parentId", ASCENDING)])
    await db.room_items.create_index([("fileId", ASCENDING)])  # a deleted file leaves every room
    await one_place_per_room(db)
    await db.room_links.create_index([("hash", ASCENDING)], unique=True)
    await db.room_links.create_index([("roomId", ASCENDING)])
    await db.room_links.create_index([("accountId", ASCENDING), ("expiresAt", ASCENDING)])
    await db.access_log.create_index([("roomId", ASCENDING), ("at", DESCENDING)], sparse=True)
    # A room's log filtered by action is a time range too (services.rooms.activity).
    await db.access_log.create_index(
        [("roomId", ASCENDING), ("action", ASCENDING), ("at", DESCENDING)], sparse=True)


async def _audit_indexes(db: Db) -> None:
    # The audit log's sequencer reads every new entry by time, whatever its account
    # (services.audit.sequencer); its own records are read by index, never scanned.
    await db.access_log.create_index([("at", ASCENDING)])
    await db.activity.create_index([("at", ASCENDING)])
    # Which index an entry has (its proof by id, the sequencer's check after a take-over).
    await db.audit_pieces.create_index([("keys", ASCENDING)])
    await db.audit_checkpoints.create_index([("accountId", ASCENDING), ("size", ASCENDING)])
    # The checkpoints still to be copied to the Object Lock bucket (services.audit.lock_copy).
    await db.audit_checkpoints.create_index([("copyPending", ASCENDING)], sparse=True)


async def _member_indexes(db: Db) -> None:
    """Members: one record per person and account (unique), an account's admins (the
    last-admin rule counts them), a person's records by address (sign-in, the account choice);
    their sessions by address (their listing, newest first) and by public id (revocation);
    each session, code and sign-in link dropped by the database when its time is over (TTL);
    the activity log's pages, newest first within an account (common.newest)."""
    await db.members.create_index([("email", ASCENDING)])
    await db.member_sessions.create_index([("email", ASCENDING), ("createdAt", DESCENDING)])
    await db.member_sessions.create_index([("email", ASCENDING), ("publicId", ASCENDING)])
    await db.member_sessions.create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await db.sign_in_codes.create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await db.sign_in_links.create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await db.raw("rate_limits").create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
    await db.members.create_index([("accountId", ASCENDING), ("email", ASCENDING)], unique=True)
    await db.activity.create_index([("accountId", ASCENDING), ("at", DESCENDING),
                                    ("_id", DESCENDING)])
    # The console's Activity page filtered by action: a time range too (services.common.feed).
    await db.access_log.create_index(
        [("accountId", ASCENDING), ("action", ASCENDING), ("at", DESCENDING)])
    await db.activity.create_index(
        [("accountId", ASCENDING), ("action", ASCENDING), ("at", DESCENDING)])


async def count_links_once(db: Db) -> None:
    """Accounts and files written before live-link counts existed get theirs, counted once
    (`services.accounts.link_counts`); a marker in `migrations` keeps later start-ups from
    recounting."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": LINK_COUNT_MIGRATION}) is not None:
        return
    for records, key in ((db.raw(db.accounts.name), "accountId"), (db.raw(db.files.name),
                                                                   "fileId")):
        async for doc in records.find({"linkCount": {"$exists": False}}, {"_id": 1}):
            now = datetime.now(UTC)
            live = await db.links.count_documents(
                {key: doc["_id"], "revoked": False, "expiresAt": {"$gt": now}})
            await records.update_one({"_id": doc["_id"], "linkCount": {"$exists": False}},
                                     {"$set": {"linkCount": {"live": live, "sweptAt": now}}})
    await marks.update_one({"_id": LINK_COUNT_MIGRATION}, {"$set": {"at": datetime.now(UTC)}},
                           upsert=True)


async def count_rooms_once(db: Db) -> None:
    """Accounts written before rooms were counted on write get their `roomCount` (the plan's
    cap, `services.rooms.records`), and their live room links join `linkCount.live`
    (`services.accounts.link_counts`), each once: `linkCount.rooms` marks an account done."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": ROOM_COUNT_MIGRATION}) is not None:
        return
    accounts = db.raw(db.accounts.name)
    async for doc in accounts.find({"linkCount.rooms": {"$exists": False}}, {"_id": 1}):
        now = datetime.now(UTC)
        rooms = await db.rooms.count_documents({"accountId": doc["_id"]})
        live = await db.room_links.count_documents(
            {"accountId": doc["_id"], "revoked": False, "expiresAt": {"$gt": now}})
        await accounts.update_one(
            {"_id": doc["_id"], "linkCount.rooms": {"$exists": False}},
            {"$set": {"roomCount": rooms, "linkCount.rooms": True},
             "$inc": {"linkCount.live": live}})
    await marks.update_one({"_id": ROOM_COUNT_MIGRATION}, {"$set": {"at": datetime.now(UTC)}},
                           upsert=True)


NUMBERING_WINDOW = 200  # files read per step, newest first (each read well under 50 ms)
NUMBERING_BATCH = 20  # updates per command: a file carries several indexes, as a link does


async def number_files_once(db: Db) -> None:
    """Files written before they were numbered in their account get numbers below the first
    upload's, the newest 0 and older ones -1, -2... (by `createdAt`, then `_id`, as the listing
    ordered them), and the account the lowest as `fileSeqFloor`, so the listing reads them by
    number too (`services.common.numbered`); a marker in `migrations` keeps later start-ups
    from looking again. Uploads meanwhile take 1, 2... from `fileSeq`: the two never meet.
    Each account's files are read in time windows, one millisecond's ties at a time at a
    window's edge, and written NUMBERING_BATCH per command: no step holds the database long."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": FILE_NUMBER_MIGRATION}) is not None:
        return
    async for account in db.raw(db.accounts.name).find({}, {"_id": 1}):
        lowest = await _number_account_files(db, account["_id"])
        if lowest is not None:
            await db.accounts.update_one({"_id": account["_id"]},
                                         {"$min": {"fileSeqFloor": lowest}})
    await marks.update_one({"_id": FILE_NUMBER_MIGRATION}, {"$set": {"at": datetime.now(UTC)}},
                           upsert=True)


async def _number_account_files(db: Db, account_id: str) -> int | None:
    """Numbers the account's unnumbered files, newest first from 0; the lowest given, if any."""
    files = db.raw(db.files.name)
    query, fields = {"accountId": account_id}, ("seq",)
    upper: datetime | None = None
    given = 0
    while True:
        docs = (await newest(files, query, "createdAt", count=NUMBERING_WINDOW, before=upper,
                             oldest=EPOCH, fields=fields)).docs
        if not docs:
            return 1 - given if given else None
        edge = docs[-1]["createdAt"]
        # The rest of the edge's millisecond (ties), before the next window starts below it.
        tied = await files.find({**query, "createdAt": edge}, {"seq": 1, "createdAt": 1}).to_list()
        docs = [doc for doc in docs if doc["createdAt"] != edge]
        docs += sorted(tied, key=lambda doc: doc["_id"], reverse=True)
        updates = [UpdateOne({"_id": doc["_id"]}, {"$set": {"seq": -(given + place)}})
                   for place, doc in enumerate(doc for doc in docs if "seq" not in doc)]
        for first in range(0, len(updates), NUMBERING_BATCH):
            await files.bulk_write(updates[first:first + NUMBERING_BATCH], ordered=False)
        given += len(updates)
        upper = edge


RENDER_ID_INDEX = "accountId_renderId_unique"


async def _unique_render_ids(db: Db) -> None:
    """Leak tracing looks a decoded render id up within one account, where it names one page
    view: the page path draws again when this index refuses an id (`PagePath.start`). Only
    `page` entries are in it: a `trace` entry names the id it found, again."""
    indexes = await db.access_log.index_information()
    if "accountId_1_renderId_1" in indexes:  # before ids were unique: same keys, not unique
        await db.access_log.drop_index("accountId_1_renderId_1")
    await db.access_log.create_index(
        [("accountId", ASCENDING), ("renderId", ASCENDING)], name=RENDER_ID_INDEX, unique=True,
        partialFilterExpression={"action": "page", "renderId": {"$exists": True}})


async def _number_endpoints_without_slot(db: Db) -> None:
    """Endpoints created before slots existed get the account's lowest free ones (the unique
    index would refuse two endpoints of one account without a slot)."""
    async for doc in db.webhook_endpoints.find({"slot": {"$exists": False}}, {"accountId": 1}):
        taken = set(await db.webhook_endpoints.distinct("slot", {"accountId": doc["accountId"]}))
        slot = next(number for number in itertools.count() if number not in taken)
        await db.webhook_endpoints.update_one({"_id": doc["_id"], "slot": {"$exists": False}},
                                              {"$set": {"slot": slot}})


ROOM_FILE_INDEX = "roomId_fileId_unique"


async def one_place_per_room(db: Db) -> None:
    """A file is in a room at most once, held by a unique index that concurrent adds cannot
    pass (`services.rooms.items.add_file`). Adds racing before it existed may have left a file
    twice in a room, which would fail the index's build: the older item stays, the later ones
    go (and their room's `itemCount` with them), once, before the index is built."""
    if ROOM_FILE_INDEX in await db.room_items.index_information():
        return
    seen: set[tuple[str, str]] = set()
    found = db.room_items.find({"fileId": {"$exists": True}}, {"roomId": 1, "fileId": 1},
                               sort=[("createdAt", ASCENDING), ("_id", ASCENDING)])
    async for item in found:
        place = (item["roomId"], item["fileId"])
        if place not in seen:
            seen.add(place)
            continue
        removed = await db.room_items.delete_one({"_id": item["_id"]})
        if removed.deleted_count:
            log.warning("room %s held file %s twice: the later item %s removed",
                        item["roomId"], item["fileId"], item["_id"])
            await db.rooms.update_one({"_id": item["roomId"], "itemCount": {"$exists": True}},
                                      {"$inc": {"itemCount": -1}})
    await db.room_items.create_index(
        [("roomId", ASCENDING), ("fileId", ASCENDING)], name=ROOM_FILE_INDEX, unique=True,
        partialFilterExpression={"fileId": {"$exists": True}})

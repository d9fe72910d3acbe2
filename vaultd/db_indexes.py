"""The indexes vaultd's queries stand on, and the one-time fixes of records written before
one of them could exist: `ensure_indexes`, run at start-up by vaultd and by vault-admin.

Each domain declares its indexes beside its services (`INDEXES` in
`vaultd/services/<domain>/db_indexes.py`); this module joins them (`declared_indexes`), as
`web.app` joins the route modules' `ROUTES`, refusing an index declared twice or on a collection
vaultd does not have, and adds the walks' `_id`-led pairs (`db.WALKS`)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime

from pymongo import ASCENDING
from pymongo.errors import OperationFailure

from vaultd.db import (
    FILE_NUMBER_MIGRATION,
    GATE_COUNTERS,
    LINK_COUNT_MIGRATION,
    ROOM_COUNT_MIGRATION,
    WALKS,
    Db,
)
from vaultd.index_spec import Index, index
from vaultd.services.accounts import db_indexes as accounts
from vaultd.services.accounts import link_shards_once
from vaultd.services.analytics import db_indexes as analytics
from vaultd.services.audit import db_indexes as audit
from vaultd.services.common import db_indexes as common
from vaultd.services.common import numbered, rolling_limits
from vaultd.services.files import db_indexes as files
from vaultd.services.gates import db_indexes as gates
from vaultd.services.gates import session_numbers as viewer_session_numbers
from vaultd.services.links import db_indexes as links
from vaultd.services.links import link_numbers, link_states_once
from vaultd.services.members import activity_numbers, session_numbers
from vaultd.services.members import db_indexes as members
from vaultd.services.pages import db_indexes as pages
from vaultd.services.rooms import activity as room_activity
from vaultd.services.rooms import db_indexes as rooms
from vaultd.services.rooms import room_counts, room_numbers
from vaultd.services.rooms.db_indexes import ROOM_FILE_INDEX
from vaultd.services.tracing import db_indexes as tracing
from vaultd.services.webhooks import db_indexes as webhooks
from vaultd.services.webhooks import delivery_numbers

log = logging.getLogger("vaultd.db")

DOMAINS: Mapping[str, Sequence[Index]] = {
    "common": common.INDEXES, "accounts": accounts.INDEXES, "members": members.INDEXES,
    "webhooks": webhooks.INDEXES, "files": files.INDEXES, "links": links.INDEXES,
    "gates": gates.INDEXES, "pages": pages.INDEXES, "rooms": rooms.INDEXES,
    "analytics": analytics.INDEXES, "audit": audit.INDEXES,
    "tracing": tracing.INDEXES,
}
# Indexes vaultd made once and no longer declares, dropped at start-up by name (the default
# name of their keys) where a database still has them: each still costs its entries on every
# write of what it covers.
RETIRED: tuple[tuple[str, str], ...] = (
    # Render ids' plain index: the unique one of `pages.db_indexes` has the same keys and cannot
    # be made beside it.
    ("access_log", "accountId_1_renderId_1"),
    # A revoke-all's batch on each link it marked, which nothing read (a held webhook waits for
    # the holder's `linkRevokes` note): one more entry moved per link the marking writes.
    ("links", "revokedBatch_1__id_1"),
)
# The server's answers to dropping what is not there: another vaultd starting at once dropped it
# first (IndexNotFound), or the collection was never made (NamespaceNotFound).
ALREADY_GONE = frozenset({26, 27})
# The collections an index may be declared on: each typed one of `Db`, and those read raw.
COLLECTIONS = frozenset({name for name, member in vars(Db).items() if isinstance(member, property)}
                        | {GATE_COUNTERS, rolling_limits.COLLECTION})


class IndexDeclarationError(Exception):
    """An index declared twice (by one domain or two), or on a collection vaultd does not have."""


def declared_indexes(domains: Mapping[str, Sequence[Index]] = DOMAINS,
                     collections: Collection[str] = COLLECTIONS) -> list[Index]:
    """Every domain's indexes, then each walked collection's `_id`-led pair; one index per
    collection and keys: a second declaration of the same keys would hide a disagreement."""
    walks = [index(name, "_id", second) for name, (second, _prefix) in WALKS.items()]
    joined: dict[tuple[str, tuple[tuple[str, int], ...]], str] = {}
    found: list[Index] = []  # in declaration order: a domain's own order is kept
    for domain, declared in [*domains.items(), ("db.WALKS", walks)]:
        for one in declared:
            if one.collection not in collections:
                raise IndexDeclarationError(
                    f"{domain} declares an index on {one.collection!r}, not a collection of vaultd")
            first = joined.get((one.collection, one.keys))
            if first is not None:
                raise IndexDeclarationError(
                    f"the index {one.described()} is declared twice ({first} and {domain})")
            joined[(one.collection, one.keys)] = domain
            found.append(one)
    return found


async def ensure_indexes(db: Db) -> None:
    """Idempotent; run at start-up by vaultd and by vault-admin. The fixes a unique index needs
    first, the declared indexes, then the counts and numbers that read through them."""
    await drop_retired(db)
    await _number_endpoints_without_slot(db)
    await one_place_per_room(db)
    for one in declared_indexes():
        await create(db, one)
    await count_links_once(db)
    await count_rooms_once(db)
    await room_numbers.number_rooms_once(db)
    await room_counts.count_room_links_once(db)
    await room_activity.tag_room_stats_once(db)
    await number_files_once(db)
    await link_numbers.number_links_once(db)
    await link_shards_once.link_shards_once(db)
    await link_states_once.link_listed_once(db)
    await activity_numbers.number_activity_once(db)
    await session_numbers.number_sessions_once(db)
    await delivery_numbers.number_deliveries_once(db)
    await viewer_session_numbers.number_sessions_once(db)
    await activity_numbers.number_actions_once(db)


async def create(db: Db, one: Index) -> None:
    await db.raw(one.collection).create_index(list(one.keys), **dict(one.options))


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


async def number_files_once(db: Db) -> None:
    """Files written before they were numbered in their account get numbers below the first
    upload's, the newest 0 and older ones -1, -2... (by `createdAt`, then `_id`, as the listing
    ordered them), and the account the lowest as `fileSeqFloor`, so the listing reads them by
    number too (`services.common.numbered`); a marker in `migrations` keeps later start-ups
    from looking again. Uploads meanwhile take 1, 2... from `fileSeq`: the two never meet.
    Each account's files are numbered by `numbered.number_unnumbered`, in steps that hold the
    database briefly."""
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
    return await numbered.number_unnumbered(db.raw(db.files.name), {"accountId": account_id},
                                            "createdAt", "seq")


async def drop_retired(db: Db, retired: Sequence[tuple[str, str]] = RETIRED) -> None:
    """Drops each retired index a database still has, before the declared ones are made (one
    of them may need its keys). Idempotent, and safe with several processes starting at once:
    one finding the index gone when it drops it has nothing left to do."""
    for collection, name in retired:
        if name not in await db.raw(collection).index_information():
            continue
        try:
            await db.raw(collection).drop_index(name)
        except OperationFailure as error:
            if error.code not in ALREADY_GONE:
                raise
        else:
            log.info("dropped the retired index %s of %s", name, collection)


async def _number_endpoints_without_slot(db: Db) -> None:
    """Endpoints created before slots existed get the account's lowest free ones (the unique
    index would refuse two endpoints of one account without a slot)."""
    async for doc in db.webhook_endpoints.find({"slot": {"$exists": False}}, {"accountId": 1}):
        taken = set(await db.webhook_endpoints.distinct("slot", {"accountId": doc["accountId"]}))
        slot = next(number for number in itertools.count() if number not in taken)
        await db.webhook_endpoints.update_one({"_id": doc["_id"], "slot": {"$exists": False}},
                                              {"$set": {"slot": slot}})


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
    await create(db, rooms.ONE_PLACE_PER_ROOM)

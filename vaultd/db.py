"""MongoDB access: one AsyncMongoClient, the collections and the indexes the queries need.

The same code runs against the embedded SecantusDB, a standalone MongoDB or a replica set; only
the URI differs. Writes use majority write concern where the deployment supports it (the URI
can say `w=majority`); nothing here depends on transactions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from pymongo import ASCENDING, DESCENDING, AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from vaultd.records import (
    AccessLogDoc,
    AccountDoc,
    AgreementDoc,
    ApiKeyDoc,
    DeliveryDoc,
    DeploymentKeyDoc,
    FileDoc,
    InstanceDoc,
    LinkDoc,
    LinkStatsDoc,
    OutboxDoc,
    RoomDoc,
    RoomItemDoc,
    RoomLinkDoc,
    ViewerSessionDoc,
    WebhookEndpointDoc,
)
from vaultd.records.members import (
    ActivityDoc,
    MemberDoc,
    MemberSessionDoc,
    SignInCodeDoc,
    SignInLinkDoc,
)
from vaultd.records.notifications import LinkOpenNoteDoc, NotificationMailDoc, NotificationPrefsDoc

# What the driver returns before a collection's record type applies. The casts below are where
# the stored shapes (vaultd.records) are asserted; every write goes through the same types.
RawDoc = dict[str, Any]


@dataclass
class Db:
    """The database and its collections, each typed with its record (`vaultd.records`)."""

    client: AsyncMongoClient[RawDoc]
    database: AsyncDatabase[RawDoc]

    @property
    def accounts(self) -> AsyncCollection[AccountDoc]:
        return cast("AsyncCollection[AccountDoc]", self.database["accounts"])

    @property
    def api_keys(self) -> AsyncCollection[ApiKeyDoc]:
        return cast("AsyncCollection[ApiKeyDoc]", self.database["api_keys"])

    @property
    def files(self) -> AsyncCollection[FileDoc]:
        return cast("AsyncCollection[FileDoc]", self.database["files"])

    @property
    def links(self) -> AsyncCollection[LinkDoc]:
        return cast("AsyncCollection[LinkDoc]", self.database["links"])

    @property
    def access_log(self) -> AsyncCollection[AccessLogDoc]:
        return cast("AsyncCollection[AccessLogDoc]", self.database["access_log"])

    @property
    def instances(self) -> AsyncCollection[InstanceDoc]:
        return cast("AsyncCollection[InstanceDoc]", self.database["instances"])

    @property
    def members(self) -> AsyncCollection[MemberDoc]:
        return cast("AsyncCollection[MemberDoc]", self.database["members"])

    @property
    def member_sessions(self) -> AsyncCollection[MemberSessionDoc]:
        return cast("AsyncCollection[MemberSessionDoc]", self.database["member_sessions"])

    @property
    def sign_in_codes(self) -> AsyncCollection[SignInCodeDoc]:
        return cast("AsyncCollection[SignInCodeDoc]", self.database["sign_in_codes"])

    @property
    def sign_in_links(self) -> AsyncCollection[SignInLinkDoc]:
        return cast("AsyncCollection[SignInLinkDoc]", self.database["sign_in_links"])

    @property
    def activity(self) -> AsyncCollection[ActivityDoc]:
        return cast("AsyncCollection[ActivityDoc]", self.database["activity"])

    @property
    def notification_prefs(self) -> AsyncCollection[NotificationPrefsDoc]:
        return cast("AsyncCollection[NotificationPrefsDoc]", self.database["notification_prefs"])

    @property
    def notification_opens(self) -> AsyncCollection[LinkOpenNoteDoc]:
        return cast("AsyncCollection[LinkOpenNoteDoc]", self.database["notification_opens"])

    @property
    def notification_mails(self) -> AsyncCollection[NotificationMailDoc]:
        return cast("AsyncCollection[NotificationMailDoc]", self.database["notification_mails"])

    def raw(self, name: str) -> AsyncCollection[RawDoc]:
        """A collection read by an aggregation, whose results are not the stored records."""
        return self.database[name]

    @property
    def link_stats(self) -> AsyncCollection[LinkStatsDoc]:
        return cast("AsyncCollection[LinkStatsDoc]", self.database["link_stats"])

    @property
    def webhook_endpoints(self) -> AsyncCollection[WebhookEndpointDoc]:
        return cast("AsyncCollection[WebhookEndpointDoc]", self.database["webhook_endpoints"])

    @property
    def deployment_keys(self) -> AsyncCollection[DeploymentKeyDoc]:
        return cast("AsyncCollection[DeploymentKeyDoc]", self.database["deployment_keys"])

    @property
    def webhook_outbox(self) -> AsyncCollection[OutboxDoc]:
        return cast("AsyncCollection[OutboxDoc]", self.database["webhook_outbox"])

    @property
    def webhook_deliveries(self) -> AsyncCollection[DeliveryDoc]:
        return cast("AsyncCollection[DeliveryDoc]", self.database["webhook_deliveries"])

    @property
    def viewer_sessions(self) -> AsyncCollection[ViewerSessionDoc]:
        return cast("AsyncCollection[ViewerSessionDoc]", self.database["viewer_sessions"])

    @property
    def agreements(self) -> AsyncCollection[AgreementDoc]:
        return cast("AsyncCollection[AgreementDoc]", self.database["agreements"])

    @property
    def rooms(self) -> AsyncCollection[RoomDoc]:
        return cast("AsyncCollection[RoomDoc]", self.database["rooms"])

    @property
    def room_items(self) -> AsyncCollection[RoomItemDoc]:
        return cast("AsyncCollection[RoomItemDoc]", self.database["room_items"])

    @property
    def room_links(self) -> AsyncCollection[RoomLinkDoc]:
        return cast("AsyncCollection[RoomLinkDoc]", self.database["room_links"])

    async def close(self) -> None:
        await self.client.close()

    async def reconnect(self, uri: str) -> None:
        """Point every holder of this Db at a new address (the embedded database restarted on
        another port); operations on the old client fail and are answered 503."""
        old = self.client
        fresh = connect(uri, self.database.name)
        self.client, self.database = fresh.client, fresh.database
        await old.close()


def _uri_option(uri: str, name: str) -> str | None:
    query = uri.split("?", 1)[1] if "?" in uri else ""
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key.lower() == name.lower():
            return value
    return None


# While the database is unreachable a request must fail fast (a JSON 503 within 5 s, one
# retried read included) rather than wait out the driver's 30 s default; a hung server is cut
# after SOCKET_TIMEOUT_MS. URI options override these.
SELECTION_TIMEOUT_MS = 2000
SOCKET_TIMEOUT_MS = 10000


def connect(uri: str, database: str, timeout_ms: int = SELECTION_TIMEOUT_MS) -> Db:
    client: AsyncMongoClient[RawDoc] = AsyncMongoClient(
        uri,
        tz_aware=True,
        serverSelectionTimeoutMS=int(_uri_option(uri, "serverSelectionTimeoutMS") or timeout_ms),
        connectTimeoutMS=int(_uri_option(uri, "connectTimeoutMS") or timeout_ms),
        socketTimeoutMS=int(_uri_option(uri, "socketTimeoutMS") or SOCKET_TIMEOUT_MS),
        uuidRepresentation="standard",
        appname="vaultd",
        # Many concurrent requests queue for a connection rather than open hundreds; measured
        # faster under load against SecantusDB (see docs/security.md, Load). A URI option
        # overrides it.
        maxPoolSize=int(_uri_option(uri, "maxPoolSize") or 20),
    )
    return Db(client, client[database])


def public_address(uri: str) -> str:
    """The hosts of a MongoDB URI, without its credentials (for messages and logs)."""
    scheme, _, rest = uri.partition("://")
    hosts = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return f"{scheme}://{hosts}" if rest else "(not a MongoDB URI)"


async def ping(db: Db) -> None:
    await db.client.admin.command("ping")


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
    await db.rooms.create_index([("accountId", ASCENDING), ("createdAt", DESCENDING)])
    await db.room_items.create_index([("roomId", ASCENDING), ("parentId", ASCENDING)])
    await db.room_items.create_index([("fileId", ASCENDING)])  # a deleted file leaves every room
    await db.room_links.create_index([("hash", ASCENDING)], unique=True)
    await db.room_links.create_index([("roomId", ASCENDING)])
    await db.room_links.create_index([("accountId", ASCENDING), ("expiresAt", ASCENDING)])
    await db.access_log.create_index([("roomId", ASCENDING), ("at", DESCENDING)], sparse=True)
    await _member_indexes(db)
    for name, (second, _prefix) in WALKS.items():
        await db.raw(name).create_index([("_id", ASCENDING), (second, ASCENDING)])
    await count_links_once(db)
    await count_rooms_once(db)


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
    await db.members.create_index([("accountId", ASCENDING), ("role", ASCENDING),
                                   ("state", ASCENDING)])
    await db.activity.create_index([("accountId", ASCENDING), ("at", DESCENDING),
                                    ("_id", DESCENDING)])
    # The console's Activity page filtered by action: a time range too (services.common.feed).
    await db.access_log.create_index(
        [("accountId", ASCENDING), ("action", ASCENDING), ("at", DESCENDING)])
    await db.activity.create_index(
        [("accountId", ASCENDING), ("action", ASCENDING), ("at", DESCENDING)])


# Bulk work (backup, storage tools, key rotation) walks these collections in closed `_id`
# windows (services.common.id_ranges): SecantusDB's own `_id` index serves equality only, an index
# led by `_id` serves a range. Name -> (that index's second field, what the collection's ids hold
# before their hex digits). The collections left out stay small (instances, migrations, ...).
WALKS: dict[str, tuple[str, str]] = {
    "accounts": ("linkCount.sweptAt", ""), "files": ("state", ""), "links": ("fileId", ""),
    "access_log": ("at", ""), "link_stats": ("totalSeconds", ""),
    "api_keys": ("accountId", "key_"), "webhook_endpoints": ("accountId", "ep_"),
    "webhook_outbox": ("state", "msg_"), "webhook_deliveries": ("at", ""),
    "viewer_sessions": ("linkId", ""), "agreements": ("accountId", ""),
    "rooms": ("accountId", ""), "room_items": ("roomId", ""), "room_links": ("roomId", ""),
}


LINK_COUNT_MIGRATION = "linkCount"
ROOM_COUNT_MIGRATION = "roomCount"
GATE_COUNTERS = "gate_counters"  # services.gates.counters: rolling windows with an expiry


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

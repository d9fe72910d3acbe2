"""MongoDB access: one AsyncMongoClient, the collections and the indexes the queries need.

The same code runs against the embedded SecantusDB, a standalone MongoDB or a replica set; only
the URI differs. Writes use majority write concern where the deployment supports it (the URI
can say `w=majority`); nothing here depends on transactions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from pymongo import AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from vaultd.db_deadline import Collection
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
from vaultd.records.audit import (
    AuditBlockDoc,
    AuditCheckpointDoc,
    AuditKeyDoc,
    AuditNodeDoc,
    AuditPieceDoc,
    AuditSequencerDoc,
    AuditTreeDoc,
)
from vaultd.records.members import (
    ActivityDoc,
    MemberDoc,
    MemberSessionDoc,
    NumberCounterDoc,
    SignInCodeDoc,
    SignInLinkDoc,
)
from vaultd.records.notifications import LinkOpenNoteDoc, NotificationMailDoc, NotificationPrefsDoc
from vaultd.records.tracing import PagePrintDoc

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
        return cast("AsyncCollection[AccountDoc]", self._collection("accounts"))

    @property
    def api_keys(self) -> AsyncCollection[ApiKeyDoc]:
        return cast("AsyncCollection[ApiKeyDoc]", self._collection("api_keys"))

    @property
    def files(self) -> AsyncCollection[FileDoc]:
        return cast("AsyncCollection[FileDoc]", self._collection("files"))

    @property
    def links(self) -> AsyncCollection[LinkDoc]:
        return cast("AsyncCollection[LinkDoc]", self._collection("links"))

    @property
    def access_log(self) -> AsyncCollection[AccessLogDoc]:
        return cast("AsyncCollection[AccessLogDoc]", self._collection("access_log"))

    @property
    def instances(self) -> AsyncCollection[InstanceDoc]:
        return cast("AsyncCollection[InstanceDoc]", self._collection("instances"))

    @property
    def members(self) -> AsyncCollection[MemberDoc]:
        return cast("AsyncCollection[MemberDoc]", self._collection("members"))

    @property
    def member_sessions(self) -> AsyncCollection[MemberSessionDoc]:
        return cast("AsyncCollection[MemberSessionDoc]", self._collection("member_sessions"))

    @property
    def number_counters(self) -> AsyncCollection[NumberCounterDoc]:
        return cast("AsyncCollection[NumberCounterDoc]", self._collection("number_counters"))

    @property
    def sign_in_codes(self) -> AsyncCollection[SignInCodeDoc]:
        return cast("AsyncCollection[SignInCodeDoc]", self._collection("sign_in_codes"))

    @property
    def sign_in_links(self) -> AsyncCollection[SignInLinkDoc]:
        return cast("AsyncCollection[SignInLinkDoc]", self._collection("sign_in_links"))

    @property
    def activity(self) -> AsyncCollection[ActivityDoc]:
        return cast("AsyncCollection[ActivityDoc]", self._collection("activity"))

    @property
    def audit_pieces(self) -> AsyncCollection[AuditPieceDoc]:
        return cast("AsyncCollection[AuditPieceDoc]", self._collection("audit_pieces"))

    @property
    def audit_blocks(self) -> AsyncCollection[AuditBlockDoc]:
        return cast("AsyncCollection[AuditBlockDoc]", self._collection("audit_blocks"))

    @property
    def audit_nodes(self) -> AsyncCollection[AuditNodeDoc]:
        return cast("AsyncCollection[AuditNodeDoc]", self._collection("audit_nodes"))

    @property
    def audit_trees(self) -> AsyncCollection[AuditTreeDoc]:
        return cast("AsyncCollection[AuditTreeDoc]", self._collection("audit_trees"))

    @property
    def audit_checkpoints(self) -> AsyncCollection[AuditCheckpointDoc]:
        return cast("AsyncCollection[AuditCheckpointDoc]", self._collection("audit_checkpoints"))

    @property
    def audit_sequencer(self) -> AsyncCollection[AuditSequencerDoc]:
        return cast("AsyncCollection[AuditSequencerDoc]", self._collection("audit_sequencer"))

    @property
    def audit_keys(self) -> AsyncCollection[AuditKeyDoc]:
        return cast("AsyncCollection[AuditKeyDoc]", self._collection("audit_keys"))

    @property
    def notification_prefs(self) -> AsyncCollection[NotificationPrefsDoc]:
        return cast("AsyncCollection[NotificationPrefsDoc]", self._collection("notification_prefs"))

    @property
    def notification_opens(self) -> AsyncCollection[LinkOpenNoteDoc]:
        return cast("AsyncCollection[LinkOpenNoteDoc]", self._collection("notification_opens"))

    @property
    def notification_mails(self) -> AsyncCollection[NotificationMailDoc]:
        return cast("AsyncCollection[NotificationMailDoc]", self._collection("notification_mails"))

    def raw(self, name: str) -> AsyncCollection[RawDoc]:
        """A collection read by an aggregation, whose results are not the stored records."""
        return self._collection(name)

    def _collection(self, name: str) -> Collection[RawDoc]:
        # Writes inside a request are waited for past its deadline (vaultd.db_deadline).
        return Collection(self.database, name)

    @property
    def link_stats(self) -> AsyncCollection[LinkStatsDoc]:
        return cast("AsyncCollection[LinkStatsDoc]", self._collection("link_stats"))

    @property
    def webhook_endpoints(self) -> AsyncCollection[WebhookEndpointDoc]:
        return cast("AsyncCollection[WebhookEndpointDoc]", self._collection("webhook_endpoints"))

    @property
    def deployment_keys(self) -> AsyncCollection[DeploymentKeyDoc]:
        return cast("AsyncCollection[DeploymentKeyDoc]", self._collection("deployment_keys"))

    @property
    def webhook_outbox(self) -> AsyncCollection[OutboxDoc]:
        return cast("AsyncCollection[OutboxDoc]", self._collection("webhook_outbox"))

    @property
    def webhook_deliveries(self) -> AsyncCollection[DeliveryDoc]:
        return cast("AsyncCollection[DeliveryDoc]", self._collection("webhook_deliveries"))

    @property
    def viewer_sessions(self) -> AsyncCollection[ViewerSessionDoc]:
        return cast("AsyncCollection[ViewerSessionDoc]", self._collection("viewer_sessions"))

    @property
    def agreements(self) -> AsyncCollection[AgreementDoc]:
        return cast("AsyncCollection[AgreementDoc]", self._collection("agreements"))

    @property
    def rooms(self) -> AsyncCollection[RoomDoc]:
        return cast("AsyncCollection[RoomDoc]", self._collection("rooms"))

    @property
    def room_items(self) -> AsyncCollection[RoomItemDoc]:
        return cast("AsyncCollection[RoomItemDoc]", self._collection("room_items"))

    @property
    def room_links(self) -> AsyncCollection[RoomLinkDoc]:
        return cast("AsyncCollection[RoomLinkDoc]", self._collection("room_links"))

    @property
    def page_prints(self) -> AsyncCollection[PagePrintDoc]:
        return cast("AsyncCollection[PagePrintDoc]", self._collection("page_prints"))

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
# The pool closes its own connections idle this long. SecantusDB drops a client's connection
# idle 300 s (`secantus.server.DEFAULT_CLIENT_IDLE_TIMEOUT_S`); the async driver stops reading
# a pooled connection between commands, so it sees the close only once it has sent the next
# command, which then fails ("connection is already closed"; the embedded URI has no retryable
# writes, reads are retried).
MAX_IDLE_MS = 60_000


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
        maxIdleTimeMS=int(_uri_option(uri, "maxIdleTimeMS") or MAX_IDLE_MS),
    )
    return Db(client, client[database])


def public_address(uri: str) -> str:
    """The hosts of a MongoDB URI, without its credentials (for messages and logs)."""
    scheme, _, rest = uri.partition("://")
    hosts = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return f"{scheme}://{hosts}" if rest else "(not a MongoDB URI)"


def describe_failure(exc: PyMongoError) -> str:
    """A database error in words, for an operator's one line: what the database did. Not the
    driver's text (it names hosts and options) nor its class (some are private:
    `_OperationCancelled`)."""
    if exc.timeout:
        return "the database did not answer in time"
    if isinstance(exc, ConnectionFailure):
        return "the connection to the database was lost or refused"
    if isinstance(exc, OperationFailure):
        return f"the database refused an operation (code {exc.code})"
    return f"database error: {type(exc).__name__.lstrip('_')}"


async def ping(db: Db) -> None:
    await db.client.admin.command("ping")


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
    "page_prints": ("accountId", ""),
    "number_counters": ("seq", ""),
}
HEX = "0123456789abcdef"
ADDRESS = "+-.0123456789@_abcdefghijklmnopqrstuvwxyz"  # a lower-cased address's characters
# Collections whose ids name their kind before their hex digits (or an address): walked kind
# by kind (`id_ranges.KeySpace`), in this order (each prefix sorts after the last one's ids).
# What lies outside them (`access_log:horizon`, a kind not named here) is read between two.
WALK_SPACES: dict[str, tuple[tuple[str, str], ...]] = {
    "number_counters": (
        ("access_log:account-action:", HEX), ("access_log:account:", HEX),
        ("access_log:file-action:", HEX), ("access_log:file:", HEX),
        ("access_log:room-action:", HEX), ("access_log:room:", HEX), ("activity:", HEX),
        ("deliveries:ep_", HEX), ("sessions:", ADDRESS)),
}


LINK_COUNT_MIGRATION = "linkCount"
ROOM_COUNT_MIGRATION = "roomCount"
FILE_NUMBER_MIGRATION = "fileSeq"
GATE_COUNTERS = "gate_counters"  # services.gates.counters: rolling windows with an expiry

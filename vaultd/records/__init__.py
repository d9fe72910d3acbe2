"""The shape of every MongoDB document vaultd stores: one TypedDict per collection.

`vaultd.db.Db` types each collection with its record, so a misspelt key or a wrong value type
is a mypy error wherever a service reads or writes one. A read with a projection returns only
the projected keys of the record: such reads say so by name (`*_FIELDS` constants beside them).
Field names are camelCase because they are the stored names (spec section 6).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from vaultd.records.rooms import RoomDoc as RoomDoc
from vaultd.records.rooms import RoomItemDoc as RoomItemDoc
from vaultd.records.rooms import RoomItemType as RoomItemType
from vaultd.records.rooms import RoomLinkDoc as RoomLinkDoc

FileKind = Literal["source", "delivery"]
FileState = Literal["stored", "deleting"]
Action = Literal["upload", "view", "page", "download", "delete", "revoke", "trace", "verify",
                 "agreement", "room.view"]


class UsageDoc(TypedDict):
    documents: int
    storageBytes: int


class FileGapDoc(TypedDict):
    """A stretch of an account's numbers, `bottom` to `top`, that holds no file and never will
    (`services.files.file_gaps`)."""

    bottom: int
    top: int


class LinkCountDoc(TypedDict):
    """Live links kept on write (`services.accounts.link_counts`): those not revoked whose expiry is
    after `sweptAt`."""

    live: int
    sweptAt: NotRequired[datetime]
    rooms: NotRequired[bool]  # the account's room links joined `live` (db_indexes.count_rooms_once)
    # A file's: no counted link expires before `nextExpiry`, trusted beside `ahead` (seconds the
    # sweep looks past its time); `moved` counts links created or given a new expiry.
    nextExpiry: NotRequired[datetime]
    ahead: NotRequired[float]
    moved: NotRequired[int]


class PendingUploadDoc(TypedDict):
    """A reserved upload not yet settled; `owner` is the reserving instance's id."""

    id: str
    size: int
    at: datetime
    owner: str


class AccountDoc(TypedDict):
    """Collection `accounts`."""

    _id: str
    name: str
    plan: str
    branding: str | None
    createdAt: datetime
    usage: UsageDoc
    pendingUploads: list[PendingUploadDoc]
    pendingDeletes: list[str]
    linkCount: NotRequired[LinkCountDoc]
    roomCount: NotRequired[int]  # rooms, kept on write under the plan's cap (services.rooms)
    # The last number given to a room, and the lowest any room has (rooms numbered before the
    # numbers existed count down from 0: services.rooms.room_numbers); the rooms listing.
    roomSeq: NotRequired[int]
    roomSeqFloor: NotRequired[int]
    # The last number given to a file, and the lowest any file has (files numbered before the
    # numbers existed count down from 0: db_indexes.number_files_once); services.files.files.
    fileSeq: NotRequired[int]
    fileSeqFloor: NotRequired[int]
    fileGaps: NotRequired[list[FileGapDoc]]  # numbers holding no file, ever (files.file_gaps)
    # Members with the admin role not removed, kept on write so that the last one cannot be
    # demoted or removed (services.members.admins); absent before the first admin is added.
    adminCount: NotRequired[int]


class ApiKeyDoc(TypedDict):
    """Collection `api_keys`. Only the key's SHA-256 (`hash`) is stored."""

    _id: str
    accountId: str
    hash: str
    hint: str
    createdAt: datetime
    revokedAt: datetime | None
    # Absent on keys made before keys had them: such a key is an unnamed admin key, which is
    # exactly what every key was (services.members.callers reads the defaults).
    name: NotRequired[str]
    role: NotRequired[str]  # a services.members.roles.Role value
    createdBy: NotRequired[dict[str, str]]  # the actor who made it (records.members.ActorRecord)


class BlobDoc(TypedDict):
    """Where a file's ciphertext lives and its data key, wrapped by the master key."""

    name: str
    size: int
    key: dict[str, Any]  # WrappedKey.to_doc(): parsed and checked by WrappedKey.from_doc


class RenditionDoc(BlobDoc):
    """An image's picture at the served size (`vaultd.services.files.renditions`): a second blob,
    a PNG of `plainSize` bytes, made for the budget it names; or an Office document's PDF
    (`vaultd.services.files.office`: `contentType` PDF, for every budget, longSide and maxPixels
    0)."""

    plainSize: int
    longSide: int
    maxPixels: int
    contentType: NotRequired[str]  # absent: a PNG


class LinkRevokeDoc(TypedDict):
    """A file's revoke-all whose links are not all marked yet (`services.links.revoke_jobs`)."""

    at: datetime  # links live then left the counts with it
    batch: str  # its job's id


class FileDoc(TypedDict):
    """Collection `files`."""

    _id: str
    accountId: str
    name: str
    kind: FileKind
    contentType: str
    size: int
    pageCount: int
    createdAt: datetime
    state: FileState
    blob: BlobDoc
    rendition: NotRequired[RenditionDoc]
    deletingAt: NotRequired[datetime]
    linkCount: NotRequired[LinkCountDoc]
    liveLinksAtDelete: NotRequired[int]  # taken from the account's count when deleted
    # Raised by each revoke-all; links of an older one are revoked (accounts.link_generations).
    linkGeneration: NotRequired[int]
    seq: NotRequired[int]  # its number in the account, newest highest (services.common.numbered)
    # Seconds the last full page of its log spanned, by action ("all": any): the next read's
    logSpans: NotRequired[dict[str, float]]  # first window, in any process (common.access_log)
    linkRevokes: NotRequired[dict[str, LinkRevokeDoc]]  # revoke-alls not yet written on links
    linkSeq: NotRequired[int]  # the last number given to a link (services.links.link_numbers)
    linkSeqFloor: NotRequired[int]  # the lowest (links numbered at start-up count down from 0)
    linkTotal: NotRequired[int]  # its link records: the links listing's total
    # every link of it carries `shard`: among 256, or among 32 where True (accounts.link_shards)
    linkShards: NotRequired[bool | int]
    # Its last revoke-all: every link numbered up to linkRevokedTo revoked, linkRevokedCount of
    # them; linkRevokedSince: revoked one by one since (services.links.link_states).
    linkRevokedTo: NotRequired[int]
    linkRevokedCount: NotRequired[int]
    linkRevokedSince: NotRequired[int]
    deleteOwner: NotRequired[str]  # the instance cleaning up after its deletion, till it dies


class LinkDoc(TypedDict):
    """Collection `links`. Only the token's SHA-256 (`hash`) is stored."""

    _id: str
    hash: str
    accountId: str
    fileId: str
    viewerEmail: str
    viewerName: str
    createdAt: datetime
    expiresAt: datetime
    revoked: bool
    countedOut: NotRequired[bool]  # revoked while live: left the live counts then
    policy: NotRequired[PolicyDoc]  # the link's gates (services.gates); absent: none
    opens: NotRequired[int]  # opens counted against policy.maxOpens
    exhausted: NotRequired[bool]  # True once an open beyond maxOpens was refused: link spent
    sessionsOpened: NotRequired[int]  # viewer sessions opened (absent: made before the count)
    generation: NotRequired[int]  # its file's linkGeneration when counted (absent: 0)
    createdBy: NotRequired[str]  # the member who made it in the console (absent: an API key)
    seq: NotRequired[int]  # its number in its file, newest highest (services.common.numbered)
    shard: NotRequired[int]  # from seq and its file: its expiry ranges read per shard (link_shards)
    # The state last written on it: active, expired or revoked (services.links.link_states).
    listed: NotRequired[str]


class AgreementRefDoc(TypedDict):
    """The agreement version a link was created with: it keeps it whatever is added later."""

    id: str
    version: int
    sha256: str


class PolicyDoc(TypedDict, total=False):
    """A link's gates as stored (`services.gates.policy`); the passcode only as a slow hash."""

    verifyEmail: bool
    passcodeHash: str
    agreement: AgreementRefDoc
    allowedIps: list[str]
    notBefore: datetime
    maxOpens: int


class ViewerSessionDoc(TypedDict):
    """Collection `viewer_sessions`: one reader's gates passed on a link; its id kept hashed."""

    _id: str
    hash: str
    linkId: str
    accountId: str
    createdAt: datetime
    expiresAt: datetime
    passed: dict[str, datetime]  # gate name -> when it was passed
    ip: NotRequired[str]
    code: NotRequired[dict[str, Any]]  # the current email code: keyed hash, expiry, tries
    lastCodeAt: NotRequired[datetime]
    wrongPasscodes: NotRequired[int]
    acceptedName: NotRequired[str]
    seq: NotRequired[int]  # its number in its link, newest highest (gates.session_numbers)
    # True: counted against maxOpens when its last gate is passed (absent: counted when opened)
    countsWhenAdmitted: NotRequired[bool]


class AgreementDoc(TypedDict):
    """Collection `agreements`: one immutable version of an agreement's text."""

    _id: str  # "<agreementId>:<version>"
    agreementId: str
    accountId: str
    version: int
    name: str
    text: str
    sha256: str
    createdAt: datetime


class AccessLogDoc(TypedDict):
    """Collection `access_log`: one entry per action on a file."""

    _id: str
    accountId: str
    fileId: NotRequired[str]  # absent on an entry about no file (`room.view`)
    action: Action
    at: datetime
    viewerEmail: NotRequired[str]
    ip: NotRequired[str]
    page: NotRequired[int]
    viewerName: NotRequired[str]  # page entries: for leak tracing, not part of the spec's entry
    renderId: NotRequired[str]  # page entries: the served page's forensic id (render.forensic)
    detail: NotRequired[dict[str, Any]]  # verify / agreement entries: what happened (gates)
    roomId: NotRequired[str]  # entries of a room's reads (`room.view`, its pages)
    # Who did it, when a key or a member's session did: not in the spec's entry (common.acting)
    actor: NotRequired[dict[str, str]]
    fenced: NotRequired[bool]  # written through services.common.log_fence: not in the entry
    # Its numbers in its file, account and room, given after the insert (common.log_numbering)
    fileSeq: NotRequired[int]
    accountSeq: NotRequired[int]
    roomSeq: NotRequired[int]


class InstanceDoc(TypedDict):
    """Collection `instances`: one per running vaultd, for recovery's liveness test."""

    _id: str
    host: str
    pid: int
    started: str | None  # the process's start time from /proc, to tell a reused pid
    seenAt: datetime


class PageStatsDoc(TypedDict, total=False):
    views: int
    seconds: float


class LinkStatsOpening(TypedDict):
    """The fields of a `link_stats` record set once, by the link's first open."""

    accountId: str
    fileId: str
    viewerEmail: str
    viewerName: str
    pageCount: int
    totalSeconds: float
    firstOpenedAt: datetime
    openMarker: str
    openIp: str | None


class LinkStatsDoc(LinkStatsOpening):
    """Collection `link_stats`: one link's engagement aggregates, keyed by the link's id.

    `openAnnounced` / `completeAnnounced` are False from the moment the open (or completion)
    is recorded until its webhook is queued: written in the same document as the fact, so the
    outbox sweep finds an event a crash left unqueued."""

    _id: str
    lastSeenAt: datetime
    seen: NotRequired[list[int]]
    pages: NotRequired[dict[str, PageStatsDoc]]  # "p1": {views, seconds}
    completedAt: NotRequired[datetime | None]
    openAnnounced: NotRequired[bool]
    completeAnnounced: NotRequired[bool]
    alertOwed: NotRequired[bool]  # the member's first-open notification not queued yet


class DeploymentKeyDoc(TypedDict):
    """Collection `deployment_keys`: keys of the whole deployment, stored only wrapped by the
    master keyring (`trace-mark`: the invisible mark's key, `services.pages.mark_key`)."""

    _id: str
    key: dict[str, Any]  # WrappedKey.to_doc(), bound to "deployment:<_id>"
    layout: NotRequired[str]  # the mark's layout since ("keyed-v1"); absent: the published one
    publishedLayoutUntil: NotRequired[datetime]  # pages before this carry the published layout


class WebhookEndpointDoc(TypedDict):
    """Collection `webhook_endpoints`. `slot` (0-9) is unique per account: the limit of 10
    endpoints holds under concurrent creates. The secret is stored only wrapped."""

    _id: str
    accountId: str
    slot: int
    url: str
    events: list[str]
    secret: dict[str, Any]  # WrappedKey.to_doc(), bound to "webhook:<_id>" and the account
    createdAt: datetime


OutboxState = Literal["held", "pending", "delivered", "failed", "cancelled"]


class AwaitedRecordDoc(TypedDict):
    """What a held outbox message waits for: a document of `collection` matching `query`."""

    collection: str
    query: dict[str, str | bool]


class OutboxDoc(TypedDict):
    """Collection `webhook_outbox`: one message per (event, endpoint); `_id` is its
    `webhook-id`. `held` messages wait for their event's record (`awaits`) to be written."""

    _id: str
    accountId: str
    endpointId: str
    type: str
    body: str
    createdAt: datetime
    state: OutboxState
    attempts: int
    nextAttemptAt: datetime
    leaseUntil: datetime
    leaseOwner: NotRequired[str]
    lastError: NotRequired[str | None]
    awaits: NotRequired[AwaitedRecordDoc]
    finishedAt: NotRequired[datetime]


class DeliveryDoc(TypedDict):
    """Collection `webhook_deliveries`: one record per delivery attempt."""

    _id: str
    messageId: str
    endpointId: str
    accountId: str
    type: str
    attempt: int
    at: datetime
    status: int | None
    ok: bool
    durationMs: int
    error: str | None

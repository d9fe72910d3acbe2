"""The records of an account's people: its members (the identity the console stands on)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NotRequired, TypedDict

RoleName = Literal["admin", "member", "auditor"]
MemberState = Literal["invited", "active", "removed"]


class MemberDoc(TypedDict):
    """One person in one account (collection `members`, unique on `accountId` + `email`).

    A person in several accounts has one record in each. A removed member's record is kept,
    so that the activity log's actor still resolves to a name."""

    _id: str  # a UUID
    accountId: str
    email: str  # normalised by email-validator, lower-cased: the sign-in identity
    name: str
    role: RoleName
    state: MemberState
    # Raised whenever the member's role changes or they are removed: a session remembers the
    # epoch it was opened under and ends once the member's epoch has moved past it.
    sessionEpoch: int
    createdAt: datetime
    updatedAt: datetime
    invitedBy: NotRequired[str | None]  # the actor who added them (a member id or "operator")


SignInMethod = Literal["code", "link", "oidc"]


class MemberSessionDoc(TypedDict):
    """A signed-in person's session (collection `member_sessions`).

    `_id` is the SHA-256 of the session id the cookie carries: the id itself is never stored.
    Until the person chooses an account (one account is chosen for them), `accountId`,
    `memberId` and `epoch` are None; the session then answers only `/console/auth/*`."""

    _id: str
    publicId: str  # what listings show and revocation names: not the cookie's secret
    email: str
    method: SignInMethod
    accountId: str | None
    memberId: str | None
    epoch: int | None  # the member's `sessionEpoch` when the account was chosen
    ip: str
    userAgent: str
    createdAt: datetime
    lastSeenAt: datetime
    expiresAt: datetime  # the absolute lifetime's end; the TTL index deletes the record then
    # Its number among the address's sessions, listed newest first by ranges of them
    # (services.members.session_numbers); absent only until the start-up that numbers them.
    seq: NotRequired[int]


class NumberCounterDoc(TypedDict):
    """Collection `number_counters`: the last number given to a record of one scope, for the
    records whose writer touches no record of their scope (services.common.counters)."""

    _id: str  # the scope: "activity:<account id>", "sessions:<address>"
    seq: NotRequired[int]  # absent until the scope's first new record
    floor: NotRequired[int]  # the lowest number of a record written before numbers existed
    # The access log's scopes (services.common.numbered_log): the time of the scope's first
    # numbered entry; and, on "access_log:horizon" alone, the time before which every entry
    # is numbered.
    since: NotRequired[datetime]
    horizon: NotRequired[datetime]
    stretchMs: NotRequired[float]  # "access_log:horizon": the next round's stretch to read
    # The access log's entries written before numbering (services.common.older_log_numbering):
    # on a scope, how many numbers it has below 1 (its lowest is `1 - older`); on
    # "access_log:horizon", where the rounds started numbering per action (`actionsFrom`), how
    # far back the walk has numbered every entry (`back`) and its next window (`backMs`).
    older: NotRequired[int]
    actionsFrom: NotRequired[datetime]
    back: NotRequired[datetime]
    backMs: NotRequired[float]
    # On a scope: when a read first found a page of entries below its numbers once the walk
    # was done (a tool's, with older times): its old part is read by windows until a read
    # finds it empty. (On "access_log:horizon", the whole log's, from earlier versions: unread.)
    oldEntriesAt: NotRequired[datetime]


class SignInCodeDoc(TypedDict):
    """A mailed sign-in code (collection `sign_in_codes`, `_id` = the address, lower-cased).

    Only the code's HMAC is kept. One code per address: asking again replaces it."""

    _id: str
    hash: str
    tries: int
    expiresAt: datetime


class SignInLinkDoc(TypedDict):
    """An operator's one-time sign-in URL (collection `sign_in_links`, `_id` = the token's
    SHA-256). Deleted when used, so two uses at once find it once."""

    _id: str
    accountId: str
    email: str
    expiresAt: datetime


# What the activity log records: the account's own actions, never a file's (those are the
# access log's). A closed set: a reader filters and a console labels by these names.
ActivityAction = Literal[
    "member.added", "member.role_changed", "member.removed",
    "key.created", "key.revoked",
    "webhook.created", "webhook.deleted", "webhook.changed",
    "branding.changed",
    "signin", "signin.failed", "signout",
]
ActorKindName = Literal["key", "member", "operator"]


class ActorRecord(TypedDict):
    """Who acted, as stored beside what they did (`services.members.actor.Actor.as_record`)."""

    kind: ActorKindName
    id: str  # the key's id, the member's id, or "operator"
    label: str  # what a person reads: the member's email, the key's name


class ActivityDoc(TypedDict):
    """Collection `activity`: one account action, read newest first on (accountId, at, _id)."""

    _id: str  # a UUID's hex: orders the entries of one millisecond
    accountId: str
    at: datetime
    actor: ActorRecord
    action: ActivityAction
    target: NotRequired[str]  # what was acted on: a member's email, a key's or endpoint's id
    detail: NotRequired[dict[str, str]]  # a few short values (the new role, the key's name)
    ip: NotRequired[str]
    fenced: NotRequired[bool]  # written through services.common.log_fence: not in the entry
    # Its number in the account, read newest first by ranges (services.members.activity_numbers):
    # storage for the reading order, not in the audit's entry either.
    seq: NotRequired[int]
    actionSeq: NotRequired[int]  # its number among the account's events of its action, as seq

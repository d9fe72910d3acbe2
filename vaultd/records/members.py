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

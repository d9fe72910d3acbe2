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

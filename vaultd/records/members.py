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

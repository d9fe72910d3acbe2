"""The records of members' mail notifications: what each member asked for, the opens of their
links a digest reports, and the mails waiting to be sent (`services.notifications`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NotRequired, TypedDict

MailKind = Literal["open", "digest"]
MailState = Literal["pending", "sent", "dropped"]


class NotificationPrefsDoc(TypedDict):
    """Collection `notification_prefs`, one per member (`_id` = the member's id)."""

    _id: str
    accountId: str
    firstOpen: bool  # mail me when one of my links is opened for the first time
    dailyDigest: bool  # mail me once a day what my links did
    # When this member's next digest is due; None while the digest is off. Moved a day on by
    # the process that queues the digest, after the queueing (a crash re-queues the same mail).
    digestDueAt: datetime | None
    updatedAt: datetime
    lastOpenMailAt: NotRequired[datetime]  # the last first-open mail queued: one per window


class LinkOpenNoteDoc(TypedDict):
    """Collection `notification_opens`: a member's link opened for the first time (`_id` = the
    link's id, so a first open is noted once however often it is reported). Read by the digest
    as a range of (memberId, at); kept `KEEP_DAYS`."""

    _id: str
    accountId: str
    memberId: str
    at: datetime
    fileName: str  # for a room link: "the room <name>"
    viewerEmail: str
    viewerName: str
    mailOwed: NotRequired[bool]  # the member wants a mail for it and none was queued yet


class NotificationMailDoc(TypedDict):
    """Collection `notification_mails`: one mail to send, claimed under a lease so that one
    process sends it. `_id` names the occurrence (`opens:<member>:<first open>`,
    `digest:<member>:<day>`), so queueing it again is a no-op: one mail per occurrence.
    The recipient is the member's address read when it is sent: a removed member gets none."""

    _id: str
    accountId: str
    memberId: str
    kind: MailKind
    subject: str
    text: str
    state: MailState
    attempts: int
    createdAt: datetime
    nextAttemptAt: datetime
    leaseUntil: datetime
    leaseOwner: NotRequired[str]
    sentAt: NotRequired[datetime]
    noteIds: NotRequired[list[str]]  # a first-open mail: the opens it reports

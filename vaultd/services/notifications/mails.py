"""The notification mails waiting to be sent: queued under the id of their occurrence, claimed
under a lease, sent, then marked sent.

Each mail is queued with `insert_one` under an id that names what it reports (a link's first
open, a member's digest of one day): a second report of the same occurrence, from a retry, a
sweep or another process, collides and adds nothing. One process at a time holds a mail (the
lease, taken by one conditional update); it is marked sent right after the SMTP server accepted
it. A process killed between the two leaves a mail that another sends again when the lease
runs out: at least once, and once unless a process dies in that instant (docs/console.md)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from vaultd.config import Settings
from vaultd.db import Db
from vaultd.errors import ServiceUnavailable
from vaultd.records.notifications import MailKind, NotificationMailDoc
from vaultd.services.common import smtp
from vaultd.services.common.batches import delete_older
from vaultd.timefmt import utcnow

log = logging.getLogger("vaultd.notifications")

NEVER_LEASED = datetime(1970, 1, 1, tzinfo=UTC)
RETRY_SECONDS = (5.0, 60.0, 300.0, 1800.0, 3600.0)  # then the mail is dropped
FINISHED = ("sent", "dropped")
KEEP = timedelta(days=7)  # sent and dropped mails, for a look at what went out


async def queue(db: Db, mail_id: str, account_id: str, member_id: str, kind: MailKind,
                subject: str, text: str, note_ids: list[str] | None = None) -> bool:
    """Queued now; False when this occurrence was queued before (nothing is added)."""
    now = utcnow()
    doc: NotificationMailDoc = {
        "_id": mail_id, "accountId": account_id, "memberId": member_id, "kind": kind,
        "subject": subject, "text": text, "state": "pending", "attempts": 0, "createdAt": now,
        "nextAttemptAt": now, "leaseUntil": NEVER_LEASED}
    if note_ids is not None:
        doc["noteIds"] = note_ids
    try:
        await db.notification_mails.insert_one(doc)
    except DuplicateKeyError:
        return False
    return True


async def claim(db: Db, owner: str, lease_seconds: float) -> NotificationMailDoc | None:
    now = utcnow()
    return await db.notification_mails.find_one_and_update(
        {"state": "pending", "nextAttemptAt": {"$lte": now}, "leaseUntil": {"$lte": now}},
        {"$set": {"leaseUntil": now + timedelta(seconds=lease_seconds), "leaseOwner": owner}},
        sort=[("nextAttemptAt", 1)], return_document=ReturnDocument.AFTER)


async def send(db: Db, settings: Settings, mail: NotificationMailDoc, owner: str) -> bool:
    """One attempt: sent and marked so, put back for a retry, or dropped (the member was
    removed, or every retry failed). True when the SMTP server took it."""
    member = await db.members.find_one({"_id": mail["memberId"]}, {"email": 1, "state": 1})
    if member is None or member.get("state") != "active":
        await _finish(db, mail, owner, "dropped")
        return False
    message = EmailMessage()
    message["From"] = smtp.sender(settings)
    message["To"] = member["email"]
    message["Subject"] = mail["subject"]
    message.set_content(mail["text"])
    try:
        await smtp.send(settings, message, "notification not sent")
    except ServiceUnavailable:
        await _retry_or_drop(db, mail, owner)
        return False
    await _finish(db, mail, owner, "sent")
    return True


async def _finish(db: Db, mail: NotificationMailDoc, owner: str, state: str) -> None:
    now = utcnow()
    await db.notification_mails.update_one(
        {"_id": mail["_id"], "leaseOwner": owner},
        {"$set": {"state": state, "sentAt": now, "leaseUntil": NEVER_LEASED,
                  "attempts": mail["attempts"] + 1}})


async def _retry_or_drop(db: Db, mail: NotificationMailDoc, owner: str) -> None:
    attempts = mail["attempts"] + 1
    if attempts > len(RETRY_SECONDS):
        log.warning("notification mail dropped after %d attempts", attempts)
        await _finish(db, mail, owner, "dropped")
        return
    later = utcnow() + timedelta(seconds=RETRY_SECONDS[attempts - 1])
    await db.notification_mails.update_one(
        {"_id": mail["_id"], "leaseOwner": owner},
        {"$set": {"attempts": attempts, "nextAttemptAt": later, "leaseUntil": NEVER_LEASED}})


async def prune(db: Db) -> int:
    """Sent and dropped mails older than `KEEP` go, a window at a time."""
    cutoff, pruned = utcnow() - KEEP, 0
    for state in FINISHED:  # one index range each: `$in` beside a range would scan them all
        pruned += await delete_older(db.raw(db.notification_mails.name), {"state": state},
                                     "sentAt", cutoff)
    return pruned

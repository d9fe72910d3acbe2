"""The daily digest: once a day, each member who asked for it gets one mail listing their links
opened for the first time in the day before (none opened: no mail).

Each member's next digest is due at `digestDueAt` (`prefs`). Any process's sweep queues the
mail of a due digest under an id naming the member and the day (`digest:<member>:<day>`), then
moves `digestDueAt` a day on with an update conditional on the value it read: two processes
sweeping at once queue one mail (the id) and move the date once (the condition); a process
killed between the two leaves the date, and the next sweep queues the same mail again: a no-op."""

from __future__ import annotations

from datetime import datetime

from vaultd.db import Db
from vaultd.records.notifications import LinkOpenNoteDoc
from vaultd.services.notifications import mails
from vaultd.services.notifications.prefs import DIGEST_EVERY
from vaultd.timefmt import iso_utc, utcnow

LISTED = 50  # opens a digest names one by one; more are counted


def digest_text(notes: list[LinkOpenNoteDoc], more: int, since: datetime,
                until: datetime) -> str:
    lines = [f"Your links opened for the first time between {iso_utc(since)} and "
             f"{iso_utc(until)}:", ""]
    lines += [f"- {note['fileName']}: {note['viewerName']} <{note['viewerEmail']}>, "
              f"{iso_utc(note['at'])}" for note in notes]
    if more:
        lines.append(f"... and {more} more (the console's Activity page lists them all)")
    lines += ["", "You asked for this daily digest. Change this in the console's Settings, "
              "under Notifications."]
    return "\n".join(lines) + "\n"


async def opens_between(db: Db, member_id: str, since: datetime, until: datetime
                        ) -> tuple[list[LinkOpenNoteDoc], int]:
    """The first `LISTED` opens of the window (an index range on memberId, at) and how many
    more there were."""
    window = {"memberId": member_id, "at": {"$gte": since, "$lt": until}}
    notes: list[LinkOpenNoteDoc] = []
    async for note in db.notification_opens.find(window).sort("at", 1).limit(LISTED):
        notes.append(note)
    more = 0
    if len(notes) == LISTED:
        more = await db.notification_opens.count_documents(window) - LISTED
    return notes, more


async def queue_due(db: Db) -> int:
    """Queue every digest due now. Returns how many mails were queued."""
    queued = 0
    async for due in db.notification_prefs.find(
            {"dailyDigest": True, "digestDueAt": {"$lte": utcnow()}}):
        until = due["digestDueAt"]
        assert until is not None  # the query matched a date
        since = until - DIGEST_EVERY
        notes, more = await opens_between(db, due["_id"], since, until)
        if notes:
            day = until.date().isoformat()
            subject = f"Your links today: {len(notes) + more} opened for the first time"
            if await mails.queue(db, f"digest:{due['_id']}:{day}", due["accountId"],
                                 due["_id"], "digest", subject,
                                 digest_text(notes, more, since, until)):
                queued += 1
        await db.notification_prefs.update_one(
            {"_id": due["_id"], "digestDueAt": until},
            {"$set": {"digestDueAt": _next_after(until)}})
    return queued


def _next_after(due: datetime) -> datetime:
    """A day on; days a stopped server missed are not mailed one by one: the next digest is
    due within a day from now."""
    following, now = due + DIGEST_EVERY, utcnow()
    while following <= now - DIGEST_EVERY:
        following += DIGEST_EVERY
    return following

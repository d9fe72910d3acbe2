"""First-open mails, coalesced: at most one mail per member per window
(`notifications.open_mail_window_seconds`, 10 minutes by default), each naming every link of
theirs first opened since the last.

The first open after a quiet window is mailed at once (the next round of the sender); the
opens that follow within the window wait for its end and leave together in one mail. So a
member who shares a document with thirty people and sees them open it within minutes gets two
mails, not thirty, and no link is ever in two mails.

The notes owed a mail carry `mailOwed` (`opens`). Each round reads a bounded batch of them (a
sparse index: only owed notes are in it), and for each member whose window has passed queues one
mail under an id drawn from its first note, listing the note ids it reports, then those notes'
flags go. The member's `lastOpenMailAt` is moved first, by an update conditional on the value
read, so that of several processes one mails for the window. A process that dies after queueing
queues the same id again (a no-op) and settles the ids the queued mail lists: nothing is
reported twice or lost."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from vaultd.db import Db
from vaultd.records.notifications import LinkOpenNoteDoc
from vaultd.services.notifications import mails
from vaultd.services.notifications.opens import printable
from vaultd.timefmt import iso_utc, utcnow

BATCH = 200  # owed notes read per round at most
MAX_LISTED = 50  # opens named in one mail; the rest are counted
MAX_SUBJECT_NAME = 80


def _subject(notes: list[LinkOpenNoteDoc]) -> str:
    if len(notes) == 1:
        return f"Opened: {printable(notes[0]['fileName'], MAX_SUBJECT_NAME)}"
    return f"Opened: {len(notes)} of your links"


def mail_text(notes: list[LinkOpenNoteDoc], window_seconds: float) -> str:
    lines = [f"- {note['fileName']!s}: {note['viewerName']} <{note['viewerEmail']}>, "
             f"{iso_utc(note['at'])}" for note in notes[:MAX_LISTED]]
    if len(notes) > MAX_LISTED:
        lines.append(f"- and {len(notes) - MAX_LISTED} more")
    head = ("Your link was opened for the first time:" if len(notes) == 1 else
            f"{len(notes)} of your links were opened for the first time:")
    minutes = max(1, round(window_seconds / 60))
    return (f"{head}\n\n" + "\n".join(lines) + "\n\n"
            f"You asked to be told when one of your links is opened; opens are gathered into "
            f"one mail at most every {minutes} minutes. Change this in the console's Settings, "
            "under Notifications.\n")


async def queue_due(db: Db, window_seconds: float, now: datetime | None = None) -> int:
    """Queue the first-open mails due now; returns how many were queued."""
    now = now or utcnow()
    owed: dict[str, list[LinkOpenNoteDoc]] = defaultdict(list)
    async for note in db.notification_opens.find({"mailOwed": True}).limit(BATCH):
        owed[note["memberId"]].append(note)
    queued = 0
    window = timedelta(seconds=window_seconds)
    for member_id, notes in owed.items():
        prefs = await db.notification_prefs.find_one({"_id": member_id},
                                                     {"lastOpenMailAt": 1, "firstOpen": 1})
        if prefs is None or not prefs.get("firstOpen"):  # switched off meanwhile
            await _settle(db, [note["_id"] for note in notes])
            continue
        last = prefs.get("lastOpenMailAt")
        if last is not None and now < last + window:
            continue  # within the window: these wait for its end, and go together
        # The window is claimed before the mail is queued, by one conditional update: of two
        # processes at this point, one goes on. A process that dies after the claim leaves the
        # notes owed, for the next window.
        unchanged = {"$exists": False} if last is None else last
        claimed = await db.notification_prefs.update_one(
            {"_id": member_id, "lastOpenMailAt": unchanged}, {"$set": {"lastOpenMailAt": now}})
        if claimed.modified_count == 0:
            continue
        notes.sort(key=lambda note: (note["at"], note["_id"]))
        mail_id = f"opens:{member_id}:{notes[0]['_id']}"
        ids = [note["_id"] for note in notes]
        if await mails.queue(db, mail_id, notes[0]["accountId"], member_id, "open",
                             _subject(notes), mail_text(notes, window_seconds), ids):
            queued += 1
        else:  # queued before a crash: settle what that mail reports, no more
            queued_mail = await db.notification_mails.find_one({"_id": mail_id}, {"noteIds": 1})
            if queued_mail is not None and "noteIds" in queued_mail:
                ids = list(queued_mail["noteIds"])
        await _settle(db, ids)
    return queued


async def _settle(db: Db, note_ids: list[str]) -> None:
    await db.notification_opens.update_many({"_id": {"$in": note_ids}},
                                            {"$unset": {"mailOwed": ""}})

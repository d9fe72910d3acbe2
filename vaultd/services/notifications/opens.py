"""A member's link opened for the first time: noted for their digest, and mailed at once when
they asked for it (`prefs.firstOpen`).

The page path's analytics (`analytics.engagement`) call `first_opened` when a link's first open
is recorded. That record (`link_stats`) is written with `alertOwed` set, in the same write as
the open itself, whenever the link has a member who made it; `first_opened` clears it once the
note and the mail are queued. So a process that dies in between leaves the flag, and any
process's sweep (`sweep_owed`) finishes the work: nothing is lost, and nothing is mailed twice
(the mail's id is the link's: `mails.queue`)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db
from vaultd.records import FileDoc, LinkDoc
from vaultd.records.notifications import LinkOpenNoteDoc
from vaultd.services.notifications import mails, prefs
from vaultd.timefmt import iso_utc, utcnow

KEEP = timedelta(days=2)  # notes outlive the digest's day by one, for a late digest
OWED_AFTER = timedelta(seconds=30)  # a flag this old was left by a process that stopped
MAX_SUBJECT_NAME = 80


def printable(text: str, limit: int) -> str:
    """One line of `text` for a mail: control characters out (a header cannot carry a line
    break), shortened with an ellipsis."""
    line = " ".join("".join(ch for ch in text if ch.isprintable()).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def open_mail_text(note: LinkOpenNoteDoc) -> str:
    return (f"Your link to {note['fileName']!s} was opened for the first time.\n\n"
            f"Viewer: {note['viewerName']} <{note['viewerEmail']}>\n"
            f"Opened at: {iso_utc(note['at'])}\n\n"
            "You asked to be told when one of your links is opened. Change this in the "
            "console's Settings, under Notifications.\n")


async def first_opened(db: Db, link: LinkDoc, file: FileDoc | None, at: datetime) -> None:
    """Note the open for the link's member and queue the mail they asked for; then the
    `alertOwed` flag goes. Safe to call again for the same link."""
    member_id = link.get("createdBy")
    if member_id is not None:
        note: LinkOpenNoteDoc = {
            "_id": link["_id"], "accountId": link["accountId"], "memberId": member_id,
            "at": at, "fileName": printable(file["name"] if file else "a deleted file", 200),
            "viewerEmail": link["viewerEmail"], "viewerName": printable(link["viewerName"], 200)}
        with contextlib.suppress(DuplicateKeyError):  # noted before: the mail is keyed alike
            await db.notification_opens.insert_one(note)
        if await prefs.wants_open_mail(db, member_id):
            subject = f"Opened: {printable(note['fileName'], MAX_SUBJECT_NAME)}"
            await mails.queue(db, f"open:{link['_id']}", link["accountId"], member_id, "open",
                              subject, open_mail_text(note))
    await db.link_stats.update_one({"_id": link["_id"]}, {"$unset": {"alertOwed": ""}})


async def sweep_owed(db: Db) -> int:
    """Finish the first opens a stopped process left owed. Returns how many."""
    cutoff = utcnow() - OWED_AFTER
    done = 0
    async for stats in db.link_stats.find({"alertOwed": True}, {"firstOpenedAt": 1}):
        if stats["firstOpenedAt"] >= cutoff:
            continue  # its own process is probably still at it
        link = await db.links.find_one({"_id": stats["_id"]})
        if link is None:
            await db.link_stats.update_one({"_id": stats["_id"]}, {"$unset": {"alertOwed": ""}})
            continue
        file = await db.files.find_one({"_id": link["fileId"]}, {"name": 1})
        await first_opened(db, link, file, stats["firstOpenedAt"])
        done += 1
    return done

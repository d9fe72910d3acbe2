"""A number per viewer session in its link, so that a link's sessions are listed newest first by
number ranges (`services.common.numbered`): the owner's view of a link reads about what it
shows, however many sessions a burst of openings left (the embedded database reads every
session of a link for a sorted, limited `find`: it does not push `limit` down).

The number is the link's `sessionsOpened` after the open that raised it: the one
`findAndModify` that already counts the session (`sessions.count_open`) returns it, so opening
a session costs no command more. The link counts every session it ever opened, pruned ones
too, so the numbers of a link's live sessions are its last ones; an insert that fails after the
count leaves a gap, which the ranges step over.

Sessions opened before numbers existed are numbered once at start-up (`number_sessions_once`),
0 and down below the first new one, the link keeping the lowest as `sessionsFloor`: a session
lives a day at most (TTL), so they are few and read at once. Links made before they counted
their sessions start counting at 1, above those.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pymongo import UpdateOne

from vaultd.db import Db

VIEWER_SESSION_NUMBER_MIGRATION = "viewerSessionSeq"
FIELD = "seq"
NUMBERING_BATCH = 20  # updates per command: the sessions carry several indexes
LINK_RECORDS = ("links", "room_links")  # a session's `linkId` names one of either


def bounds(link: Mapping[str, object]) -> tuple[int, int]:
    """(top, floor) of a link's session numbers, from its record (a file link's or a room
    link's: `sessionsOpened`, `sessionsFloor`, neither declared in their records' types)."""
    top, floor = link.get("sessionsOpened"), link.get("sessionsFloor")
    return (top if isinstance(top, int) else 0,
            min(floor, 1) if isinstance(floor, int) else 1)


async def number_sessions_once(db: Db) -> None:
    """Live sessions without a number get numbers below their link's first new one (newest 0,
    then -1, -2... by opening time and id), and the link the lowest as `sessionsFloor`; a
    marker in `migrations` keeps later start-ups from looking again."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": VIEWER_SESSION_NUMBER_MIGRATION}) is not None:
        return
    unnumbered: dict[str, list[dict[str, Any]]] = defaultdict(list)
    async for doc in db.raw(db.viewer_sessions.name).find({FIELD: {"$exists": False}},
                                                           {"linkId": 1, "createdAt": 1}):
        unnumbered[doc["linkId"]].append(doc)
    for link_id, docs in unnumbered.items():
        await number_link_sessions(db, link_id, docs)
    await marks.update_one({"_id": VIEWER_SESSION_NUMBER_MIGRATION},
                           {"$set": {"at": datetime.now(UTC)}}, upsert=True)


async def number_link_sessions(db: Db, link_id: str, docs: list[dict[str, Any]]) -> None:
    """Numbers one link's unnumbered sessions `docs` (`_id`, `createdAt`), newest 0 and down."""
    docs.sort(key=lambda doc: (doc["createdAt"], doc["_id"]), reverse=True)
    updates = [UpdateOne({"_id": doc["_id"], FIELD: {"$exists": False}},
                         {"$set": {FIELD: -place}}) for place, doc in enumerate(docs)]
    for first in range(0, len(updates), NUMBERING_BATCH):
        await db.raw(db.viewer_sessions.name).bulk_write(
            updates[first:first + NUMBERING_BATCH], ordered=False)
    for records in LINK_RECORDS:
        await db.raw(records).update_one({"_id": link_id},
                                         {"$min": {"sessionsFloor": 1 - len(docs)}})

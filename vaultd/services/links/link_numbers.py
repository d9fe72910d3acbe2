"""A number per link in its file, so that a file's links are read newest first by number ranges
(`services.common.numbered`), whatever their count, their arrival or their states.

A link's number is reserved in the write that reads its file for the link (`reserve`: one
`find_one_and_update` where a `find_one` was), before the link is inserted: a crash between the
two leaves a gap, which the ranges step over, never a link without a number. The same write
counts the file's link records (`linkTotal`), the listing's `total`; an insert that fails gives
that count back (`unreserve`). Links written before numbers existed are numbered once at
start-up (`number_links_once`), below the first new one, as `db_indexes.number_files_once`
numbers files.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from pymongo import ReturnDocument, UpdateOne
from pymongo.errors import PyMongoError

from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import FileDoc
from vaultd.services.common import id_ranges
from vaultd.services.files.files import is_uuid

LINK_NUMBER_MIGRATION = "linkSeq"
NUMBERING_BATCH = 20  # updates per command: a link carries several indexes
UNRESERVE_ATTEMPTS = 8  # each failed one means a revoke-all was raised meanwhile


async def reserve(db: Db, account_id: str, file_id: str) -> FileDoc:
    """The account's stored file, as `files.get_file` reads it, with the number of its next link
    in `linkSeq` (and that link already in `linkTotal`). Unknown, foreign, malformed and deleted
    ids are 404, and change no record (the filter names the account: `(_id, accountId, state)`
    is indexed, so it reads one record)."""
    if not is_uuid(file_id):
        raise NotFound("file not found")
    doc = await db.files.find_one_and_update(
        {"_id": file_id.lower(), "accountId": account_id, "state": "stored"},
        {"$inc": {"linkSeq": 1, "linkTotal": 1}}, return_document=ReturnDocument.AFTER)
    if doc is None:
        raise NotFound("file not found")
    return doc


async def unreserve(db: Db, file_id: str, number: int) -> None:
    """The reserved link numbered `number` was not written: out of the count again (its number
    stays a gap), and out of the revoked links' count if a revoke-all since took it
    (`link_states`: every number up to its `linkRevokedTo`). Best effort: the database that
    refused the insert may refuse this too."""
    with contextlib.suppress(PyMongoError):
        for _ in range(UNRESERVE_ATTEMPTS):  # each retry: a revoke-all came between
            file = await db.files.find_one({"_id": file_id}, {"linkRevokedTo": 1})
            if file is None:
                return
            revoked_to = file.get("linkRevokedTo")
            taken = revoked_to is not None and number <= int(revoked_to)
            result = await db.files.update_one(
                {"_id": file_id,
                 "linkRevokedTo": revoked_to if revoked_to is not None else {"$exists": False}},
                {"$inc": {"linkTotal": -1, **({"linkRevokedCount": -1} if taken else {})}})
            if result.matched_count:
                return


def listing_bounds(file: FileDoc) -> tuple[int, int, int]:
    """(total, top, floor) of a file's numbered links, as `numbered.newest_numbered` reads them."""
    return (max(int(file.get("linkTotal", 0)), 0), int(file.get("linkSeq", 0)),
            int(file.get("linkSeqFloor", 1)))


async def number_links_once(db: Db) -> None:
    """Links written before they were numbered get numbers below their file's lowest, the
    newest highest (by `createdAt`, then `_id`, as the listing ordered them), and are counted
    in `linkTotal`; a marker in `migrations` keeps later start-ups from looking again. Every read
    is a bounded `_id` window (`id_ranges`), every write NUMBERING_BATCH updates: no step holds
    the database long, whatever a file's links."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": LINK_NUMBER_MIGRATION}) is not None:
        return
    files: set[str] = set()
    async for batch in id_ranges.batches(db.raw(db.links.name), {"fileId": 1, "seq": 1}):
        files.update(link["fileId"] for link in batch if "seq" not in link)
    for file_id in sorted(files):
        await _number_file_links(db, file_id)
    await marks.update_one({"_id": LINK_NUMBER_MIGRATION}, {"$set": {"at": datetime.now(UTC)}},
                           upsert=True)


async def _number_file_links(db: Db, file_id: str) -> None:
    links = db.raw(db.links.name)
    unnumbered: list[tuple[datetime, str]] = []
    for revoked in (False, True):  # the walk's index is (fileId, revoked, _id)
        async for batch in id_ranges.batches(links, {"createdAt": 1, "seq": 1},
                                             query={"fileId": file_id, "revoked": revoked}):
            unnumbered += [(link["createdAt"], link["_id"]) for link in batch
                           if "seq" not in link]
    if not unnumbered:
        return
    file = await db.files.find_one({"_id": file_id}, {"linkSeqFloor": 1})
    top = min(int(file.get("linkSeqFloor", 1)) if file else 1, 1) - 1
    unnumbered.sort(reverse=True)
    updates = [
        UpdateOne({"_id": link_id}, {"$set": {"seq": top - place}})
        for place, (_at, link_id) in enumerate(unnumbered)]
    for first in range(0, len(updates), NUMBERING_BATCH):
        await links.bulk_write(updates[first:first + NUMBERING_BATCH], ordered=False)
    await db.files.update_one({"_id": file_id}, {"$min": {"linkSeqFloor": top - len(updates) + 1},
                                                 "$inc": {"linkTotal": len(updates)}})

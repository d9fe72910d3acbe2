"""A file's access-log page of 200 (`GET /v1/files/:id/access-log`) on a numbered log: what it
reads and what it shows. The page and the one entry past it (does a next page follow, or tie
its last millisecond?) come from one range of the file's numbers, one round trip; the entries
are the newest 200 in the log's order, each with the spec's fields as the database holds them.

Entries are written through `access_log.record` (the page path's one-command insert) and
numbered by a numbering round as the audit sequencer runs it, on a database of its own on the
test worker's SecantusDB (`tests.worker_database`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from tests.log_numbers import numbering_round
from vaultd.db import Db
from vaultd.services.common import access_log
from vaultd.timefmt import iso_utc

recorder, db = (recorded_database.recorder_per_test,
                recorded_database.db_per_test)  # this module's fixtures: a database per test

ACCOUNT, ROOM = "acct-page-reads", "room-page-reads"
LONG_AGO = datetime(2024, 1, 1).astimezone()
WRITTEN = 260  # more than a page of access_log.LATEST
PAGE = access_log.LATEST


async def written_and_numbered(db: Db) -> str:
    """WRITTEN entries of one file, as the page path and the API log them (pages through a
    room, views, downloads), then a numbering round: the fence to now, the numbers behind it
    (the first round only marks where numbers start)."""
    file_id = str(uuid.uuid4())
    assert await numbering_round(db) == 0
    for place in range(WRITTEN):
        if place % 3 == 0:
            await access_log.record(db, ACCOUNT, file_id, "page", page=1 + place % 7,
                                    viewer_email=f"reader{place % 5}@client.example",
                                    ip="203.0.113.7", room_id=ROOM, viewer_name="Reader")
        elif place % 3 == 1:
            await access_log.record(db, ACCOUNT, file_id, "view",
                                    viewer_email="ann@client.example", ip="2001:db8::1")
        else:
            await access_log.record(db, ACCOUNT, file_id, "download")
    assert await numbering_round(db) == WRITTEN
    return file_id


async def newest_in_order(db: Db, file_id: str) -> list[Any]:
    """The file's entries from the database itself, newest first in the log's order."""
    docs = await db.raw(db.access_log.name).find({"fileId": file_id}).to_list()
    return sorted(docs, key=lambda doc: (doc["at"], doc["_id"]), reverse=True)


async def test_a_page_of_200_reads_its_entries_and_the_one_past_it_in_one_range(
        db: Db, recorder: QueryRecorder) -> None:
    file_id = await written_and_numbered(db)
    docs = await newest_in_order(db, file_id)
    recorder.recording = True
    page = await access_log.latest_for_file(db, file_id, since=LONG_AGO)
    recorder.recording = False
    # Entries written within one millisecond as the 200th join the page (read by that time).
    edge = docs[PAGE - 1]["at"]
    tied = [doc for doc in docs if doc["at"] == edge] if docs[PAGE]["at"] == edge else []
    assert len(page) == PAGE + len([doc for doc in docs[PAGE:] if doc["at"] == edge])
    by_number = [query for query in recorder.queries
                 if query.collection == db.access_log.name and "fileSeq" in query.filter]
    assert [query.filter["fileSeq"] for query in by_number] == [
        {"$gte": WRITTEN - PAGE, "$lte": WRITTEN}]
    # What the database walked for the whole page: the 201 of the range (and a tied
    # millisecond's entries), nothing of the rest (the tail since the horizon holds none).
    log_queries = [query for query in recorder.queries if query.collection == db.access_log.name]
    assert await total_examined(db, log_queries) == PAGE + 1 + len(tied)


async def test_the_page_shows_the_newest_entries_field_for_field(db: Db) -> None:
    file_id = await written_and_numbered(db)
    docs = await newest_in_order(db, file_id)
    first = await access_log.latest_for_file(db, file_id, since=LONG_AGO)
    following = await access_log.latest_for_file(
        db, file_id, since=LONG_AGO, before=datetime.fromisoformat(first[-1]["at"]))
    shown = first + following
    assert len(shown) == WRITTEN == len(docs)  # each entry once, whatever the page's edge
    for entry, doc in zip(shown, docs, strict=True):
        expected: dict[str, Any] = {"at": iso_utc(doc["at"]), "fileId": file_id,
                                    "action": doc["action"]}
        for name in ("viewerEmail", "ip", "page", "roomId"):
            if name in doc:
                expected[name] = doc[name]
        assert entry == expected
        assert list(entry) == list(expected)  # the spec's order: at, fileId, action...
    # internal fields stay out: the viewer's name, the numbers, the account
    assert {"page", "view", "download"} == {entry["action"] for entry in shown}
    assert not any({"viewerName", "fileSeq", "accountId", "_id"} & set(entry) for entry in shown)

"""A room's analytics read what they add up, not the room's links: each room link's aggregates per
document (`link_stats`) carry the room's id from their first write (`analytics._first_open`), and
`GET /v1/rooms/:id/analytics` reads the room's records by that field's index
(`rooms.activity.analytics`). Beside 2,000 links never opened, the database reads the four
records the answer is made of. Records written before they carried the room's id get it once at
start-up (`activity.tag_room_stats_once`). Measured on the server's side (`tests.db_reads`),
against a real embedded SecantusDB, through the services."""

from __future__ import annotations

from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from tests.link_generation_helpers import add_file
from tests.room_link_seed import seed_room_links
from vaultd.db import Db
from vaultd.records import RoomDoc
from vaultd.services.accounts import accounts
from vaultd.services.analytics import analytics
from vaultd.services.rooms import activity, items, reads, records, room_links
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

UNOPENED = 2_000


async def _read(db: Db, recorder: QueryRecorder, room: RoomDoc,
                names: dict[str, str]) -> tuple[dict[str, Any], int]:
    """(the analytics, documents the database read for them)."""
    with recorder.recorded():
        body = await activity.analytics(db, room["_id"], names)
    return body, await total_examined(db, list(recorder.queries))


async def _token(db: Db, room: RoomDoc, email: str) -> str:
    request = room_links.RoomLinkRequest(email, email.partition("@")[0].title(), 3600, None)
    return (await room_links.create(db, room, request))[0]


async def test_a_rooms_analytics_read_its_opened_documents_records_only(
        db: Db, recorder: QueryRecorder) -> None:
    account = await accounts.create_account(db, "Analysed Rooms Co", "business")
    room = await records.create_room(db, account, "Deal room")
    first, second = await add_file(db, account), await add_file(db, account)
    for file_id in (first, second):
        await items.add_file(db, room, {"fileId": file_id})
    await seed_room_links(db, account.id, room["_id"], UNOPENED)
    names = {first: "First.pdf", second: "Second.pdf"}
    body, read = await _read(db, recorder, room, names)
    assert (body["viewers"], body["documents"], read) == ([], [], 0)

    kim, lee, max_ = [await _token(db, room, f"{who}@example.com") for who in ("kim", "lee",
                                                                              "max")]
    for token, file_id, views in ((kim, first, {1: 2}), (kim, second, {1: 1}),
                                  (lee, first, {1: 1})):
        opened = await reads.open_document(db, token, file_id)
        await analytics.note_pages(db, opened, views, "203.0.113.9")
    # Max's record was written before records carried their room: found after start-up's tag.
    max_link = await room_links.find_live(db, max_)
    await db.raw("link_stats").insert_one(
        {"_id": f"{max_link['_id']}:{first}", "accountId": account.id, "fileId": first,
         "viewerEmail": "max@example.com", "viewerName": "Max", "lastSeenAt": utcnow(),
         "totalSeconds": 3.5, "pages": {"p1": {"views": 5, "seconds": 3.5}}})
    body, read = await _read(db, recorder, room, names)
    assert [viewer["viewerEmail"] for viewer in body["viewers"]] == [
        "kim@example.com", "lee@example.com"]
    await db.raw("migrations").delete_one({"_id": activity.ROOM_STATS_MIGRATION})
    await activity.tag_room_stats_once(db)

    body, read = await _read(db, recorder, room, names)
    assert read <= 4, f"{read} documents read for 4 records beside {UNOPENED} links"
    assert [(viewer["viewerEmail"], viewer["viewerName"], viewer["documentsOpened"],
             viewer["pagesViewed"], viewer["seconds"]) for viewer in body["viewers"]] == [
        ("kim@example.com", "Kim", 2, 3, 0.0), ("lee@example.com", "Lee", 1, 1, 0.0),
        ("max@example.com", "Max", 1, 5, 3.5)]
    assert body["documents"] == [
        {"fileId": file_id, "name": names[file_id], "viewers": viewers, "seconds": seconds}
        for file_id, viewers, seconds in sorted([(first, 3, 3.5), (second, 1, 0.0)])]

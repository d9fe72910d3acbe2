"""The account read does not grow with room links: room links join the maintained
live-link count (`services.accounts.link_counts`), so `GET /v1/account` reads its counters and the
room links that expired since its last read, not every room link. Measured on the server's side as
in tests/test_scale_reads.py (`tests.db_reads`), against a real embedded SecantusDB, with the
room links written in the services' record shape."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from tests.link_clock import set_room_expiry
from vaultd.db import Db
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import accounts
from vaultd.services.rooms import records, room_links
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

LINKS = 4_000  # half of them expired before the count's last sweep, half live
CONSTANT = 40  # as tests/test_scale_reads.py: the account's own records, window edges


async def account_reads(db: Db, recorder: QueryRecorder, account_id: str) -> tuple[int, int]:
    """(activeLinks, documents the account read made the database read)."""
    account = await accounts.get_account(db, account_id)
    with recorder.recorded():
        body = await accounts.account_json(db, account)
    return body["usage"]["activeLinks"], await total_examined(db, list(recorder.queries))


async def test_the_account_read_is_bounded_whatever_its_room_links(
        db: Db, recorder: QueryRecorder) -> None:
    account = await accounts.create_account(db, "Rooms Co", "business")
    room = await records.create_room(db, account, "Data room")
    now = utcnow()
    created = now - timedelta(days=200)
    half = LINKS // 2

    def link(expires: Any) -> dict[str, Any]:
        return {"_id": str(uuid.uuid4()), "hash": digest(new_token()),
                "accountId": account.id, "roomId": room["_id"], "viewerEmail": "k@example.com",
                "viewerName": "Kim", "folderIds": None, "createdAt": created,
                "expiresAt": expires, "revoked": False}

    docs = [link(created + timedelta(hours=1 + i % 1000)) for i in range(half)]
    docs += [link(now + timedelta(days=1 + i % 300)) for i in range(half)]
    for first in range(0, len(docs), 2000):
        await db.raw("room_links").insert_many(docs[first:first + 2000], ordered=False)
    # As the services keep it: every link added on creation, the expired ones swept since.
    await db.accounts.update_one({"_id": account.id}, {"$set": {
        "linkCount": {"live": half, "sweptAt": now - timedelta(minutes=1), "rooms": True}}})

    active, read = await account_reads(db, recorder, account.id)
    assert active == half
    assert read <= CONSTANT, f"{read} documents read for {LINKS} room links"

    # A link made and one revoked through the services move the count, not the read.
    request = room_links.RoomLinkRequest("new@example.com", "New", 3600, None)
    token, _ = await room_links.create(db, room, request)
    active, read = await account_reads(db, recorder, account.id)
    assert (active, read <= CONSTANT) == (half + 1, True), read
    await room_links.revoke(db, account.id, token)
    active, read = await account_reads(db, recorder, account.id)
    assert (active, read <= CONSTANT) == (half, True), read

    # Links that expire between reads (after the last sweep) are read once, by the next read,
    # then swept.
    ids = [doc["_id"] for doc in docs[half:half + 10]]
    at = utcnow() + timedelta(seconds=0.3)
    await set_room_expiry(db, {"_id": {"$in": ids}}, at)
    await asyncio.sleep((at - utcnow()).total_seconds() + 0.05)
    active, read = await account_reads(db, recorder, account.id)
    assert active == half - 10
    assert read <= CONSTANT + 10, f"{read} documents read"
    active, read = await account_reads(db, recorder, account.id)
    assert (active, read <= CONSTANT) == (half - 10, True), read

"""A room's access log and a webhook endpoint's deliveries read their page, not the whole log:
with a month of records behind them, each read makes the database walk at most twice what it
returns and a constant (the room's: time windows, `services.common.newest`; the endpoint's:
ranges of the deliveries' numbers, `webhooks.delivery_numbers`), where it used to walk every
record of the room or the endpoint.

Measured on the server's side, as `tests/test_scale_reads.py` does (`tests.db_reads`), on a
real embedded SecantusDB with vaultd's indexes; the records are written in the services' shapes.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import Db
from vaultd.services.common import access_log
from vaultd.services.rooms import activity
from vaultd.services.webhooks import delivery_numbers, webhooks
from vaultd.timefmt import iso_utc, utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

RECORDS = 3_000  # a month of them, one every 15 minutes or so
MONTH = timedelta(days=30)
CONSTANT = 40  # window edges and the endpoint's own record


async def _examined(db: Db, recorder: QueryRecorder, work: Any) -> tuple[Any, int]:
    with recorder.recorded():
        result = await work()
    return result, await total_examined(db, list(recorder.queries))


def _times(now: datetime) -> list[datetime]:
    return [now - MONTH * (place / RECORDS) - timedelta(seconds=1) for place in range(RECORDS)]


async def test_a_rooms_log_reads_its_page_not_the_rooms_whole_log(
        db: Db, recorder: QueryRecorder) -> None:
    room_id, account_id, now = str(uuid.uuid4()), str(uuid.uuid4()), utcnow()
    entries = [{"_id": str(uuid.uuid4()), "accountId": account_id, "roomId": room_id,
                "fileId": str(uuid.uuid4()), "action": "page" if place % 3 else "room.view",
                "at": at, "page": 1} for place, at in enumerate(_times(now))]
    await db.raw(db.access_log.name).insert_many(entries)
    since = now - MONTH - timedelta(days=1)
    newest_first = sorted(entries, key=lambda entry: (entry["at"], entry["_id"]), reverse=True)
    limit = access_log.LATEST

    read_all = await _examined(db, recorder, lambda: activity.latest_entries(
        db, room_id, since=since))
    assert [entry["at"] for entry in read_all[0]] == [
        iso_utc(entry["at"]) for entry in newest_first[:limit]]
    assert read_all[1] <= 2 * limit + CONSTANT, f"newest: {read_all[1]} documents read"

    middle = now - MONTH / 2
    older = await _examined(db, recorder, lambda: activity.latest_entries(
        db, room_id, before=middle, since=since))
    assert [entry["at"] for entry in older[0]] == [
        iso_utc(entry["at"]) for entry in newest_first if entry["at"] < middle][:limit]
    assert older[1] <= 2 * limit + CONSTANT, f"before: {older[1]} documents read"

    views = await _examined(db, recorder, lambda: activity.latest_entries(
        db, room_id, action="room.view", since=since))
    assert [entry["at"] for entry in views[0]] == [
        iso_utc(entry["at"]) for entry in newest_first if entry["action"] == "room.view"][:limit]
    assert views[1] <= 2 * limit + CONSTANT, f"action: {views[1]} documents read"


async def test_an_endpoints_deliveries_read_the_latest_not_the_month(
        db: Db, recorder: QueryRecorder) -> None:
    account_id, now = str(uuid.uuid4()), utcnow()
    endpoint_id = f"ep_{secrets.token_hex(16)}"
    await db.raw(db.webhook_endpoints.name).insert_one(
        {"_id": endpoint_id, "accountId": account_id, "url": "https://hooks.example.com/in",
         "events": ["file.uploaded"], "createdAt": now - MONTH - timedelta(days=1), "slot": 0})
    deliveries = [{"_id": str(uuid.uuid4()), "messageId": f"msg_{place:032x}",
                   "endpointId": endpoint_id, "accountId": account_id, "type": "file.uploaded",
                   "attempt": 1, "at": at, "status": 200, "ok": True, "durationMs": 12,
                   "error": None} for place, at in enumerate(_times(now))]
    await db.raw(db.webhook_deliveries.name).insert_many(deliveries)
    # Recorded before numbers existed: numbered as the start-up numbers them.
    await delivery_numbers.number_endpoint_deliveries(db, endpoint_id)
    latest, read = await _examined(db, recorder, lambda: webhooks.latest_deliveries(
        db, account_id, endpoint_id))
    assert [row["messageId"] for row in latest] == [
        row["messageId"] for row in deliveries[:webhooks.LATEST_DELIVERIES]]
    assert read <= 2 * webhooks.LATEST_DELIVERIES + CONSTANT, f"{read} documents read"

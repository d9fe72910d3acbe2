"""Viewer sessions do not pile up: a session that has ended is dropped by the database (TTL on
its end time), while its link keeps counting the sessions it opened; and a link's latest
sessions are read in bounded form, whatever how many it has; a gated session counts against
`maxOpens` once, when its last gate is passed, under a new id. Against a real embedded
SecantusDB, whose TTL pass is run at once through its admin command."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import LinkDoc
from vaultd.services.gates import sessions
from vaultd.services.gates.gated import GatedLink
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # its own database server

server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

MANY = 600


async def new_link(db: Db, **fields: Any) -> LinkDoc:
    now = utcnow()
    link: LinkDoc = {"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex, "accountId": "acct",
                     "fileId": "file", "viewerEmail": "kim@example.com", "viewerName": "Kim",
                     "createdAt": now - timedelta(days=2), "expiresAt": now + timedelta(days=9),
                     "revoked": False, "sessionsOpened": 0, **fields}  # type: ignore[typeddict-item]
    await db.links.insert_one(link)
    return link


def gated(link: LinkDoc) -> GatedLink:
    """The link as its gates see it (`gated.file_link` without the file and account records)."""
    return GatedLink(link["_id"], "links", link["accountId"], link["viewerEmail"],
                     link["viewerName"], link["expiresAt"], link.get("policy"), "Acme",
                     file_id=link["fileId"])


async def test_an_ended_session_is_dropped_and_its_link_still_counts_it(db: Db) -> None:
    link = await new_link(db)
    _, ended = await sessions.open_session(db, gated(link), "203.0.113.5")
    _, current = await sessions.open_session(db, gated(link), "203.0.113.6")
    await db.viewer_sessions.update_one({"_id": ended["_id"]}, {"$set": {
        "expiresAt": ended["expiresAt"].replace(year=2000)}})
    await db.client.admin.command("secantusAdmin.pruneTtl")
    left = [doc["_id"] async for doc in db.viewer_sessions.find({"linkId": link["_id"]})]
    assert left == [current["_id"]]
    counted = await db.links.find_one({"_id": link["_id"]}, {"sessionsOpened": 1})
    assert counted is not None and counted["sessionsOpened"] == 2
    shown = await sessions.sessions_json(db, {**link, **counted})
    assert [entry["ip"] for entry in shown] == ["203.0.113.6"]


async def test_a_session_of_a_link_with_max_opens_is_counted_once_in_each_count(db: Db) -> None:
    link = await new_link(db, policy={"maxOpens": 5}, opens=0)
    await sessions.open_session(db, gated(link), None)
    counted = await db.links.find_one({"_id": link["_id"]}, {"sessionsOpened": 1, "opens": 1})
    assert counted is not None and (counted["opens"], counted["sessionsOpened"]) == (1, 1)


async def test_a_links_latest_sessions_are_read_in_bounded_form(
        db: Db, recorder: QueryRecorder) -> None:
    link = await new_link(db)
    start = link["createdAt"]
    await db.viewer_sessions.insert_many([
        {"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex, "linkId": link["_id"],
         "accountId": "acct", "createdAt": start + timedelta(minutes=4 * i),
         "expiresAt": utcnow() + timedelta(hours=1), "passed": {}, "ip": f"198.51.100.{i % 250}",
         "seq": i + 1} for i in range(MANY)])
    link["sessionsOpened"] = MANY  # as the opens that numbered them left it
    with recorder.recorded():
        shown = await sessions.sessions_json(db, link, limit=50)
    assert len(shown) == 50
    assert shown[0]["createdAt"] > shown[-1]["createdAt"]
    read = await total_examined(db, list(recorder.queries))
    assert read <= 2 * 50 + 40, f"{read} sessions read for 50 shown"


async def test_a_gated_session_is_counted_once_when_its_last_gate_is_passed(db: Db) -> None:
    link = await new_link(db, policy={"maxOpens": 1, "passcodeHash": "-"}, opens=0)
    first_id, first = await sessions.open_session(db, gated(link), None)
    _, second = await sessions.open_session(db, gated(link), None)
    counted = await db.links.find_one({"_id": link["_id"]}, {"sessionsOpened": 1, "opens": 1})
    assert counted is not None and (counted["opens"], counted["sessionsOpened"]) == (0, 2)
    renewed = await sessions.mark_passed(db, gated(link), first, "passcode")
    assert renewed != first_id
    assert await sessions.find_session(db, first_id) is None  # the old id has ended
    found = await sessions.find_session(db, renewed)
    assert found is not None and found["_id"] == first["_id"]
    with pytest.raises(NotFound):  # the second admission is beyond maxOpens: the link is spent
        await sessions.mark_passed(db, gated(link), second, "passcode")
    spent = await db.links.find_one({"_id": link["_id"]}, {"opens": 1, "exhausted": 1})
    assert spent is not None and (spent["opens"], spent.get("exhausted")) == (1, True)
    kept = await db.viewer_sessions.find_one({"_id": second["_id"]})
    assert kept is not None and kept["passed"] == {}  # nothing passed where nothing was counted


async def test_a_session_counted_when_it_was_opened_is_not_counted_again(db: Db) -> None:
    """Sessions opened before counting moved to the last gate were counted then: passing their
    gate later does not count them a second time."""
    link = await new_link(db, policy={"maxOpens": 1, "passcodeHash": "-"}, opens=1)
    _, older = await sessions.open_session(db, gated(link), None)
    await db.viewer_sessions.update_one({"_id": older["_id"]},
                                        {"$unset": {"countsWhenAdmitted": ""}})
    older.pop("countsWhenAdmitted")
    await sessions.mark_passed(db, gated(link), older, "passcode")
    counted = await db.links.find_one({"_id": link["_id"]}, {"opens": 1, "exhausted": 1})
    assert counted is not None and counted["opens"] == 1 and "exhausted" not in counted

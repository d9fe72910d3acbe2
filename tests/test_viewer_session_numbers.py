"""A link's viewer sessions are numbered in the link, by the one command that counts them, and
listed newest first by those numbers; sessions opened before numbers existed are numbered once
at start-up below the link's first new one. Against a real embedded SecantusDB."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from pymongo import monitoring

from tests import recorded_database
from tests.db_reads import QueryRecorder
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.records import LinkDoc, RoomLinkDoc
from vaultd.services.gates import session_numbers, sessions
from vaultd.services.gates.gated import GatedLink
from vaultd.services.links.links import LINK_NOT_FOUND
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # its own database server

server, db = recorded_database.server, recorded_database.db  # this module's fixtures


@dataclass
class CommandLog(QueryRecorder):
    """Every command sent while `recording`, as (command, collection)."""

    commands: list[tuple[str, str]] = field(default_factory=list)

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        super().started(event)
        if self.recording:
            self.commands.append((event.command_name, str(event.command[event.command_name])))


@pytest.fixture(scope="module")
def recorder() -> CommandLog:
    return CommandLog()


async def new_link(db: Db, **fields: Any) -> LinkDoc:
    now = utcnow()
    link: LinkDoc = {"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex, "accountId": "acct",
                     "fileId": "file", "viewerEmail": "kim@example.com", "viewerName": "Kim",
                     "createdAt": now - timedelta(days=2), "expiresAt": now + timedelta(days=9),
                     "revoked": False, **fields}  # type: ignore[typeddict-item]
    await db.links.insert_one(link)
    return link


def gated(link: LinkDoc | RoomLinkDoc, records: str = "links") -> GatedLink:
    return GatedLink(link["_id"], records, link["accountId"],  # type: ignore[arg-type]
                     link["viewerEmail"], link["viewerName"], link["expiresAt"],
                     link.get("policy"), "Acme")


async def fresh(db: Db, link: LinkDoc) -> LinkDoc:
    """The link as a request reads it now."""
    found = await db.links.find_one({"_id": link["_id"]})
    assert found is not None
    return found


async def test_each_session_takes_its_links_count_in_the_command_that_counts_it(
        db: Db, recorder: CommandLog) -> None:
    plain = await new_link(db, sessionsOpened=7)
    limited = await new_link(db, sessionsOpened=0, opens=0, policy={"maxOpens": 3})
    passcode = await new_link(db, sessionsOpened=2, opens=0,
                              policy={"maxOpens": 3, "passcodeHash": "-"})
    numbers = []
    for link in (plain, limited, passcode):
        recorder.commands.clear()
        recorder.recording = True
        try:
            _, opened = await sessions.open_session(db, gated(link), None)
        finally:
            recorder.recording = False
        assert recorder.commands == [("findAndModify", "links"), ("insert", "viewer_sessions")]
        stored = await db.viewer_sessions.find_one({"_id": opened["_id"]})
        assert stored is not None
        numbers.append(stored["seq"])
    assert numbers == [8, 1, 3]
    assert (await fresh(db, limited))["opens"] == 1  # counted against maxOpens as before
    assert (await fresh(db, passcode))["opens"] == 0  # counted when its gate is passed


async def test_a_spent_or_deleted_link_opens_no_session(db: Db) -> None:
    spent = await new_link(db, sessionsOpened=1, opens=1, policy={"maxOpens": 1})
    with pytest.raises(NotFound, match=f"^{LINK_NOT_FOUND}$"):
        await sessions.open_session(db, gated(spent), None)
    gone = await new_link(db)
    await db.links.delete_one({"_id": gone["_id"]})
    with pytest.raises(NotFound, match=f"^{LINK_NOT_FOUND}$"):
        await sessions.open_session(db, gated(gone), None)
    left = await db.viewer_sessions.count_documents(
        {"linkId": {"$in": [spent["_id"], gone["_id"]]}})
    assert left == 0
    assert (await fresh(db, spent))["sessionsOpened"] == 1


async def test_a_room_links_sessions_are_numbered_and_listed_too(db: Db) -> None:
    now = utcnow()
    link: RoomLinkDoc = {"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex,
                         "accountId": "acct", "roomId": "room", "viewerEmail": "kim@example.com",
                         "viewerName": "Kim", "folderIds": None, "createdAt": now,
                         "expiresAt": now + timedelta(days=9), "revoked": False}
    await db.room_links.insert_one(link)
    for ip in ("203.0.113.1", "203.0.113.2", "203.0.113.3"):
        await sessions.open_session(db, gated(link, "room_links"), ip)
    counted = await db.room_links.find_one({"_id": link["_id"]})
    assert counted is not None and counted["sessionsOpened"] == 3
    shown = await sessions.sessions_json(db, counted, limit=2)
    assert [row["ip"] for row in shown] == ["203.0.113.3", "203.0.113.2"]


async def unnumbered(db: Db, link: LinkDoc, minutes_ago: list[int]) -> list[str]:
    """Sessions as they were written before numbers existed, opened `minutes_ago`."""
    now = utcnow()
    docs = [{"_id": str(uuid.uuid4()), "hash": uuid.uuid4().hex, "linkId": link["_id"],
             "accountId": "acct", "createdAt": now - timedelta(minutes=ago),
             "expiresAt": now + timedelta(hours=1), "passed": {}, "ip": f"198.51.100.{ago}"}
            for ago in minutes_ago]
    await db.raw("viewer_sessions").insert_many(docs)
    return [doc["_id"] for doc in docs]


async def test_sessions_opened_before_numbers_are_numbered_once_below_the_new_ones(
        db: Db) -> None:
    uncounted = await new_link(db)  # made before links counted their sessions
    counted = await new_link(db, sessionsOpened=40)
    await unnumbered(db, uncounted, [30, 10, 20])
    await unnumbered(db, counted, [5, 6])
    await db.raw("migrations").delete_one(
        {"_id": session_numbers.VIEWER_SESSION_NUMBER_MIGRATION})
    await session_numbers.number_sessions_once(db)

    numbers = {doc["ip"]: doc["seq"] async for doc in db.viewer_sessions.find(
        {"linkId": {"$in": [uncounted["_id"], counted["_id"]]}})}
    assert numbers == {"198.51.100.10": 0, "198.51.100.20": -1, "198.51.100.30": -2,
                       "198.51.100.5": 0, "198.51.100.6": -1}
    assert (await fresh(db, uncounted))["sessionsFloor"] == -2
    assert (await fresh(db, counted))["sessionsFloor"] == -1

    for link, ip in ((uncounted, "203.0.113.9"), (counted, "203.0.113.8")):
        await sessions.open_session(db, gated(link), ip)
    listed = await sessions.sessions_json(db, await fresh(db, uncounted))
    assert [row["ip"] for row in listed] == ["203.0.113.9", "198.51.100.10", "198.51.100.20",
                                             "198.51.100.30"]
    listed = await sessions.sessions_json(db, await fresh(db, counted), limit=2)
    assert [row["ip"] for row in listed] == ["203.0.113.8", "198.51.100.5"]


async def test_numbering_runs_once(db: Db) -> None:
    link = await new_link(db)
    await session_numbers.number_sessions_once(db)  # marked done by the database's start
    [later] = await unnumbered(db, link, [1])
    await session_numbers.number_sessions_once(db)
    stored = await db.viewer_sessions.find_one({"_id": later})
    assert stored is not None and "seq" not in stored

"""Entries that land after the sequencer's last look at their time (services.common.log_fence),
on the real embedded database: a writer stalled between stamping an entry and inserting it is
refused by the collection's fence, stamps it again and lands ahead of the look, so the entry is
sequenced and the export verifies; the same late record written past the fence is never
sequenced (what the fence prevents); a fence set back by a holder that lost the lease is
noticed and the stretch behind it read again, without a duplicate; a database user that may not
set the fence (no `collMod`) still gets a late entry sequenced, from the window each such round
reads again behind its last look."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import WriteError

from admin_cli import audit_verify
from tests.embedded_database import running_database, vault_db
from tests.waiting import wait_until_async
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db, connect
from vaultd.embedded_db import EmbeddedServer
from vaultd.services.audit import blocks, export
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.lease import LEASE_ID
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import access_log, log_fence
from vaultd.services.members import activity
from vaultd.services.members.actor import Actor
from vaultd.timefmt import iso_utc, utcnow

pytestmark = pytest.mark.slow  # starts its own database server

RING = MasterKeyring.generate()
ORIGIN = "test.example/audit"
LATE = 0.3  # audit.late_arrival_seconds: short, so the last look passes a stamp quickly
LOOK_BACK = 5.0  # unfenced_look_back_seconds
WRITER_ACTIONS = ["find", "insert", "update", "remove", "listCollections", "listIndexes",
                  "createCollection", "createIndex", "killCursors", "collStats", "dbStats"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    with running_database(tmp_path / "db") as running:
        yield running


@pytest.fixture
async def db(server: EmbeddedServer) -> AsyncIterator[Db]:
    async with vault_db(server) as database:
        yield database


@pytest.fixture
async def without_coll_mod(server: EmbeddedServer, db: Db) -> AsyncIterator[Db]:
    """vaultd's database as a user who may read and write it but not run `collMod` (an external
    MongoDB's readWrite role, less the bypass of validation)."""
    await db.database.command("createRole", "logWriter", roles=[], privileges=[
        {"resource": {"db": "vaultd", "collection": ""}, "actions": WRITER_ACTIONS}])
    await db.database.command("createUser", "writer", pwd="writer-pw-5d1c",
                              roles=[{"role": "logWriter", "db": "vaultd"}])
    limited = connect(f"mongodb://writer:writer-pw-5d1c@{server.host}:{server.port}/vaultd"
                      "?authSource=vaultd&directConnection=true", "vaultd")
    try:
        yield limited
    finally:
        await limited.close()


def sequencer(db: Db, holder: str) -> Sequencer:
    config = SequencerConfig(0.05, LATE, 60.0, 1, 3600.0, ORIGIN,  # a checkpoint every entry
                             unfenced_look_back_seconds=LOOK_BACK)
    return Sequencer(db, lambda: current_signer(db, RING, ORIGIN), config, holder)


def page_entry(account_id: str, at: datetime) -> dict[str, Any]:
    """An entry as access_log.record stamps it, before its insert."""
    return {"_id": str(uuid.uuid4()), "accountId": account_id, "fileId": "file-1",
            "action": "page", "page": 3, "viewerEmail": "late@client.example", "at": at}


async def passed(db: Db, worker: Sequencer, collection: str, stamp: datetime,
                 account_id: str) -> None:
    """Rounds, with entries arriving on time, until the last look has passed `stamp`."""
    async def beyond() -> bool:
        await access_log.record(db, account_id, "file-1", "page", page=1)
        await worker.round()
        fence = (await log_fence.horizons(db, [collection])).get(collection)
        return fence is not None and fence > stamp
    await wait_until_async(beyond, timeout=30, what=f"the last look at {collection} past a stamp")


async def sequenced(db: Db, worker: Sequencer, account_id: str, keys: list[str]) -> dict[str, int]:
    """Rounds until every one of `keys` has a committed index; those indexes."""
    async def done() -> dict[str, int] | None:
        await worker.round()
        tree = await db.audit_trees.find_one({"_id": account_id})
        size = {account_id: tree["size"] if tree else 0}
        found = await blocks.committed_indexes(db, keys, size)
        return found if len(found) == len(keys) else None
    result: dict[str, int] = await wait_until_async(done, timeout=30, what="the entries' indexes")
    return result


async def exported(db: Db, worker: Sequencer, account_id: str) -> dict[str, Any]:
    async def signed() -> bool:  # the checkpoint covers the whole tree
        await worker.round()
        tree = await db.audit_trees.find_one({"_id": account_id})
        return tree is not None and tree["checkpointSize"] == tree["size"]
    await wait_until_async(signed, timeout=30, what="a checkpoint of the whole tree")
    return dict(json.loads("".join([part async for part in export.export(db, account_id,
                                                                         ORIGIN)])))


async def test_a_stalled_writers_entry_is_stamped_again_and_sequenced(db: Db) -> None:
    worker = sequencer(db, "one")
    on_time = [await access_log.record(db, "acct", "file-1", "page", page=n) for n in range(5)]
    await sequenced(db, worker, "acct", [f"access:{key}" for key in on_time])
    stamp = utcnow()
    stalled = page_entry("acct", stamp)  # stamped now; its insert comes after the last look
    unfenced = page_entry("acct", stamp)  # the same stall, written past the fence
    await passed(db, worker, "access_log", stamp, "acct")

    await log_fence.insert(db, "access_log", stalled)
    await db.raw("access_log").insert_one(unfenced)
    landed = await db.access_log.find_one({"_id": stalled["_id"]})
    fence = (await log_fence.horizons(db, ["access_log"]))["access_log"]
    assert landed is not None and landed["at"] >= fence > stamp  # refused, stamped again

    indexes = await sequenced(db, worker, "acct", [f"access:{stalled['_id']}"])
    assert indexes[f"access:{stalled['_id']}"] > len(on_time)  # after the on-time ones
    for _ in range(3):  # the unfenced one's stretch has had its last look: it never comes
        await access_log.record(db, "acct", "file-1", "page", page=2)
        await worker.round()
    tree = await db.audit_trees.find_one({"_id": "acct"})
    assert tree is not None
    missing = await blocks.committed_indexes(db, [f"access:{unfenced['_id']}"],
                                             {"acct": tree["size"]})
    assert missing == {}

    document = await exported(db, worker, "acct")
    assert audit_verify.verify(document).problems == []
    ids = [item["id"] for item in document["entries"]]
    assert ids.count(stalled["_id"]) == 1 and unfenced["_id"] not in ids
    assert set(on_time) <= set(ids)
    entry = next(item for item in document["entries"] if item["id"] == stalled["_id"])
    assert entry["entry"]["at"] == iso_utc(landed["at"])  # the time it landed


async def test_a_stalled_activity_event_is_stamped_again_and_sequenced(db: Db) -> None:
    worker = sequencer(db, "one")
    actor = Actor(account_id="acct", role="admin", kind="member", id="m1", label="Ann Admin")
    await activity.record(db, actor, "member.role_changed", target="bob@client.example",
                          detail={"from": "member", "to": "auditor"}, ip="198.51.100.4")
    await access_log.record(db, "acct", "file-1", "page", page=1)
    assert await worker.round() == 2
    stamp = utcnow()
    stalled = {"_id": uuid.uuid4().hex, "accountId": "acct", "at": stamp,
               "actor": {"kind": "member", "id": "m1", "label": "Ann Admin"},
               "action": "member.removed", "target": "bob@client.example"}

    async def beyond() -> bool:
        await activity.record(db, actor, "member.role_changed", target="c@client.example")
        await worker.round()
        fence = (await log_fence.horizons(db, ["activity"])).get("activity")
        return fence is not None and fence > stamp
    await wait_until_async(beyond, timeout=30, what="the last look at the activity past a stamp")
    await log_fence.insert(db, "activity", stalled)
    await sequenced(db, worker, "acct", [f"activity:{stalled['_id']}"])
    document = await exported(db, worker, "acct")
    assert audit_verify.verify(document).problems == []
    entry = next(item for item in document["entries"] if item["id"] == stalled["_id"])
    assert entry["type"] == "activity" and "fenced" not in entry["entry"]  # storage only


async def test_a_fence_set_back_by_a_stale_holder_is_read_behind_again(db: Db) -> None:
    worker = sequencer(db, "one")
    first = [await access_log.record(db, "acct", "file-1", "page", page=n) for n in range(3)]
    await sequenced(db, worker, "acct", [f"access:{key}" for key in first])
    stamp = utcnow()
    await passed(db, worker, "access_log", stamp, "acct")
    # A holder that lost the lease, paused since, sets the fence back behind the last look;
    # a writer stalled since `stamp` is then let in behind it.
    await log_fence.raise_horizon(db, "access_log", stamp - timedelta(seconds=1))
    behind = page_entry("acct", stamp)
    await log_fence.insert(db, "access_log", behind)
    landed = await db.access_log.find_one({"_id": behind["_id"]})
    assert landed is not None and landed["at"] == stamp  # not refused: it is behind the look

    key = f"access:{behind['_id']}"
    indexes = await sequenced(db, worker, "acct", [key])
    fence = (await log_fence.horizons(db, ["access_log"]))["access_log"]
    assert fence > stamp  # raised again
    document = await exported(db, worker, "acct")
    assert audit_verify.verify(document).problems == []
    ids = [item["id"] for item in document["entries"]]
    assert len(ids) == len(set(ids)) and ids[indexes[key]] == behind["_id"]


async def test_entries_without_the_mark_are_not_refused(db: Db) -> None:
    worker = sequencer(db, "one")
    await passed(db, worker, "access_log", utcnow(), "acct")
    old = page_entry("acct", utcnow() - timedelta(days=3))  # a tool's record of the past
    await db.raw("access_log").insert_one(old)
    assert await db.access_log.find_one({"_id": old["_id"]}) is not None
    with pytest.raises(WriteError) as refused:  # the same, marked as a writer's, is refused
        await db.raw("access_log").insert_one({**page_entry("acct", old["at"]), "fenced": True})
    assert refused.value.code == log_fence.DOCUMENT_VALIDATION_FAILURE


async def test_without_coll_mod_a_late_entry_is_sequenced_from_the_window_behind(
        db: Db, without_coll_mod: Db, caplog: pytest.LogCaptureFixture) -> None:
    worker = sequencer(without_coll_mod, "one")  # the sequencer runs as the limited user
    on_time = [await access_log.record(without_coll_mod, "acct", "file-1", "page", page=n)
               for n in range(4)]
    await sequenced(db, worker, "acct", [f"access:{key}" for key in on_time])
    stamp = utcnow()
    stalled = page_entry("acct", stamp)  # its insert comes after the last look at its stamp
    lost = page_entry("acct", stamp - timedelta(seconds=LOOK_BACK + 5))  # past the window too

    async def looked_past() -> bool:
        await access_log.record(without_coll_mod, "acct", "file-1", "page", page=1)
        await worker.round()
        lease = await db.audit_sequencer.find_one({"_id": LEASE_ID})
        return lease is not None and lease["cursors"].get("access.looked", stamp) > stamp
    await wait_until_async(looked_past, timeout=30, what="the last look past the stamp")
    assert await log_fence.horizons(db, ["access_log"]) == {}  # the fence could not be set
    assert "audit log fence on access_log not set" in caplog.text

    for entry in (stalled, lost):
        await log_fence.insert(without_coll_mod, "access_log", entry)  # nothing refuses it
    landed = await db.access_log.find_one({"_id": stalled["_id"]})
    assert landed is not None and landed["at"] == stamp  # as stamped: it lands behind the look

    key = f"access:{stalled['_id']}"
    indexes = await sequenced(db, worker, "acct", [key])
    for _ in range(3):
        await worker.round()
    document = await exported(db, worker, "acct")
    assert audit_verify.verify(document).problems == []
    ids = [item["id"] for item in document["entries"]]
    assert len(ids) == len(set(ids)) and ids[indexes[key]] == stalled["_id"]
    assert indexes[key] > max(ids.index(entry_id) for entry_id in on_time)  # in arrival order
    assert lost["_id"] not in ids  # the window is a bound: a writer stalled past it is lost

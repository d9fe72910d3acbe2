"""Bulk work in bounded steps: storage verify, gc and migrate, key rotation, backup, revoke-all,
a file's deletion and webhook retention walk a vault of 1,250 files, 1,250 links, 1,250 log
entries and 1,250 delivery records, and no query they send makes the embedded database read
more than a window of records (`services.common.id_ranges`, `services.common.newest`), measured
on the server's side through `explain` (`tests.db_reads`), against a real embedded SecantusDB.

The walks' batch sizes are a quarter of vaultd's (`knobs`) and so is the data: every walk
still spans about 25 windows, and every bound is the same multiple of a window. Not a tenth:
windows aimed at a score of records vary so much more (their density read from a few) that
one in a hundred walks read past three windows in a simulation of `id_ranges`; at a quarter,
none in several thousand.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from backends.local import LocalBackend
from tests import recorded_database
from tests.db_reads import Query, QueryRecorder, examined
from tests.scale_seed import Seeded, seed_account
from vaultd.crypto.keyring import DATA_KEY_SIZE, MasterKeyring
from vaultd.db import Db
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.common import batches, id_ranges, outbox
from vaultd.services.files import deletions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.links import revoke_jobs
from vaultd.services.storage import backup, rewrap, storage_tools
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

SHRINK = 4  # vaultd's batch sizes and this module's data, divided alike
SIZE = 5000 // SHRINK
BATCH = id_ranges.BATCH // SHRINK
WINDOW = 3 * BATCH  # a window aims at BATCH records; the density varies around it
# The revoked file's links: more than a window (a scan reads them all, and the 1,250 others
# beside them), marked in a few dozen paced writes rather than the hundreds SIZE would take.
REVOKED = 1000 // SHRINK


@pytest.fixture(scope="module", autouse=True)
def knobs() -> Iterator[None]:
    """Every batch a walk of this module aims at, a SHRINK-th of vaultd's (all read at the
    call): the `_id` walks', backup's, a revoke-all's reads, a deletion's and retention's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(id_ranges, "BATCH", BATCH)
        patch.setattr(backup, "BATCH_DOCUMENTS", backup.BATCH_DOCUMENTS // SHRINK)
        patch.setattr(revoke_jobs, "BATCH", revoke_jobs.BATCH // SHRINK)
        patch.setattr(deletions, "WINDOW", deletions.WINDOW // SHRINK)
        patch.setattr(batches, "WINDOW", batches.WINDOW // SHRINK)
        yield


@pytest.fixture(scope="module")
def ring() -> MasterKeyring:
    return MasterKeyring.generate()


@pytest.fixture(scope="module")
async def busy(db: Db, ring: MasterKeyring) -> Seeded:
    """One account's SIZE log entries and links, another's SIZE files with real data keys
    (their blobs are not stored: the tools report them missing)."""
    seeded = await seed_account(db, "Busy Co", files=1, entries=SIZE, links=SIZE)
    account = await accounts.create_account(db, "Files Co", "business")
    docs = []
    for _ in range(SIZE):
        file_id = str(uuid.uuid4())
        key = ring.wrap(secrets.token_bytes(DATA_KEY_SIZE), file_id=file_id,
                        account_id=account.id)
        docs.append({"_id": file_id, "accountId": account.id, "name": "a.pdf", "size": 10,
                     "kind": "delivery", "state": "stored", "createdAt": utcnow(),
                     "blob": {"name": file_id, "size": 10, "key": key.to_doc()}})
    for first in range(0, SIZE, 1000):
        await db.files.insert_many(docs[first:first + 1000])  # type: ignore[arg-type]
    return seeded


async def largest_read(db: Db, recorder: QueryRecorder, work: Callable[[], Awaitable[Any]]
                       ) -> tuple[Any, int, int]:
    """What `work` returns, the most documents one of its queries made the database read, and
    how many queries it sent. A point read by `_id` reads one and is not replayed."""
    with recorder.recorded():
        result = await work()
    ranges = [query for query in recorder.queries if not _by_id(query)]
    reads = [await examined(db, query) for query in ranges]
    return result, max(reads, default=0), len(recorder.queries)


def _by_id(query: Query) -> bool:
    return isinstance(query.filter.get("_id"), str)


async def test_a_walk_reads_every_record_once_a_window_at_a_time(
        db: Db, recorder: QueryRecorder, busy: Seeded) -> None:
    for name in ("files", "links", "access_log"):
        async def walk(collection: str = name) -> list[str]:
            return [doc["_id"] async for batch in id_ranges.batches(db.raw(collection), {"_id": 1})
                    for doc in batch]

        ids, most, queries = await largest_read(db, recorder, walk)
        assert len(ids) == len(set(ids)) == await db.raw(name).count_documents({})
        assert ids == sorted(ids)
        assert most <= WINDOW, f"{name}: one query read {most} documents"
        assert queries >= len(ids) // WINDOW


async def test_storage_verify_gc_and_migrate_read_a_window_at_a_time(
        db: Db, recorder: QueryRecorder, busy: Seeded, ring: MasterKeyring,
        tmp_path: Path) -> None:
    source, target = LocalBackend(tmp_path / "source"), LocalBackend(tmp_path / "target")
    for backend in (source, target):
        await backend.start()
    report, most, _ = await largest_read(
        db, recorder, lambda: storage_tools.verify(db, BlobStore(source, ring)))
    assert report.checked == SIZE + 1 and len(report.missing) == SIZE + 1
    assert most <= WINDOW, f"verify: one query read {most} documents"
    swept, most, _ = await largest_read(
        db, recorder, lambda: storage_tools.gc(db, source, older_than_seconds=3600))
    assert len(swept["missingBlobs"]) == SIZE + 1 and swept["orphans"] == []
    assert most <= WINDOW, f"gc: one query read {most} documents"
    moved, most, _ = await largest_read(
        db, recorder, lambda: storage_tools.migrate(db, ring, source, target))
    assert len(moved["failed"]) == SIZE + 1 and moved["copied"] == 0
    assert most <= WINDOW, f"migrate: one query read {most} documents"


async def test_key_rotation_rewraps_every_file_a_window_at_a_time(
        db: Db, recorder: QueryRecorder, busy: Seeded, ring: MasterKeyring) -> None:
    rotated = ring.with_new_current()
    count, most, _ = await largest_read(db, recorder, lambda: rewrap.rewrap_all(db, rotated))
    assert count == SIZE
    assert most <= WINDOW, f"rewrap: one query read {most} documents"
    assert await rewrap.rewrap_all(db, rotated) == 0  # re-running after a crash finishes it
    stale = db.files.find({"blob.key.key_id": ring.current_id}, {"_id": 1})
    assert [doc async for doc in stale] == []


async def test_backup_exports_every_collection_a_window_at_a_time(
        db: Db, recorder: QueryRecorder, busy: Seeded, ring: MasterKeyring,
        tmp_path: Path) -> None:
    blobs = LocalBackend(tmp_path / "blobs")
    await blobs.start()
    made, most, _ = await largest_read(db, recorder, lambda: backup.create_backup(
        db, blobs, lambda: ring, tmp_path / "backup", "test"))
    for name in ("files", "links", "access_log"):
        assert made["collections"][name] == await db.raw(name).count_documents({})
    assert made["collections"]["access_log"] >= SIZE
    assert len(made["missingBlobs"]) == SIZE + 1
    assert most <= WINDOW, f"backup: one query read {most} documents"


async def test_revoking_every_link_of_a_file_reads_and_writes_a_window_at_a_time(
        db: Db, recorder: QueryRecorder, busy: Seeded) -> None:
    # `busy`: another account's file with SIZE links and SIZE log entries beside this one's.
    revoking = await seed_account(db, "Revoked Co", files=1, entries=0, links=REVOKED)
    revoked, most, queries = await largest_read(db, recorder, lambda: revoke_jobs.revoke_all(
        db, revoking.account_id, revoking.busy_file, owner="vaultd-test"))
    assert revoked == revoking.live_links
    assert most <= WINDOW, f"revoke-all: one query read {most} documents"
    assert await link_counts.file_live(db, revoking.busy_file) == 0
    # Its link records are marked in the background, a window at a time.
    _, most, queries = await largest_read(db, recorder, revoke_jobs.all_marked)
    assert most <= WINDOW, f"marking a revoke-all: one query read {most} documents"
    assert queries >= revoking.live_links // revoke_jobs.BATCH
    assert await db.links.count_documents({"fileId": revoking.busy_file, "revoked": False}) == 0


async def test_deleting_a_file_reads_its_links_a_window_at_a_time(
        db: Db, recorder: QueryRecorder, busy: Seeded) -> None:
    doc = await db.files.find_one({"_id": busy.busy_file})
    assert doc is not None
    await db.raw(db.link_stats.name).insert_many(  # a link's aggregates, one per link
        [{"_id": str(uuid.uuid4()), "fileId": busy.busy_file} for _ in range(2 * SIZE // 5)])
    _, most, _ = await largest_read(db, recorder, lambda: deletions.clean_up(db, doc))
    assert most <= WINDOW, f"delete: one query read {most} documents"
    assert await db.links.count_documents({"fileId": busy.busy_file}) == 0
    assert await db.link_stats.count_documents({"fileId": busy.busy_file}) == 0
    assert await db.files.find_one({"_id": busy.busy_file}) is None


async def test_retention_prunes_a_year_of_deliveries_a_window_at_a_time(
        db: Db, recorder: QueryRecorder) -> None:
    now, keep = utcnow(), timedelta(days=30)
    times = [now - timedelta(days=365) * (n / SIZE) for n in range(SIZE)]
    await db.raw(db.webhook_deliveries.name).insert_many(
        [{"_id": str(uuid.uuid4()), "messageId": f"msg_{n}", "endpointId": "ep_x", "at": at,
          "accountId": "x", "type": "file.viewed", "attempt": 1, "status": 200, "ok": True,
          "durationMs": 1} for n, at in enumerate(times)])
    old = sum(1 for at in times if at < now - keep)
    pruned, most, queries = await largest_read(db, recorder,
                                               lambda: outbox.prune(db, keep.total_seconds()))
    assert pruned == old
    left = [doc["at"] async for doc in db.webhook_deliveries.find({}, {"at": 1})]
    assert len(left) == SIZE - old and min(left) >= now - keep - timedelta(seconds=5)
    assert most <= WINDOW, f"retention: one query read {most} documents"
    assert queries >= old // WINDOW


async def test_whether_the_vault_has_an_account_reads_a_window_not_every_account(
        db: Db, recorder: QueryRecorder, busy: Seeded) -> None:
    """`accounts.any_account` (vaultd's start-up, `vault-admin members add-first-admin`) on a
    vault of SIZE accounts reads a few, where the unfiltered `find_one` it replaced read all."""
    extra = [str(uuid.uuid4()) for _ in range(SIZE)]
    await db.raw(db.accounts.name).insert_many(
        [{"_id": account_id, "name": "Co", "plan": "free", "createdAt": utcnow()}
         for account_id in extra])
    try:
        found, most, _ = await largest_read(db, recorder, lambda: accounts.any_account(db))
        assert found is True
        assert most <= WINDOW, f"any_account: one query read {most} documents"
        _, scan, _ = await largest_read(
            db, recorder, lambda: db.accounts.find_one({}, {"_id": 1}))
        assert scan >= SIZE  # the yardstick: the scan it replaced
    finally:
        await db.raw(db.accounts.name).delete_many({"_id": {"$in": extra}})
    assert await accounts.any_account(db) is True  # busy's two accounts

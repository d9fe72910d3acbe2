"""The background steps that follow a one-write answer (a revoke-all's marking, a deletion's
clean-up) each make the database read no more than the records they write: every update and
delete they send is served by an index (`tests.db_reads.examined`, replayed as an explain), so
none holds the embedded database's one lock for a scan of every link; a room's revoke-all and
deletion (`links.revoke_jobs` kind `room`, `rooms.room_deletions`) read their links and items by
index too. And a link being created
as its file's generation rises is replaced, never moved, so that the marking may write by `_id`
alone. Against a real embedded SecantusDB, through the services."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pymongo import monitoring

from backends.local import LocalBackend
from tests import recorded_database
from tests.db_reads import Query, examined
from tests.link_generation_helpers import account_with_file, live_by_truth, new_links
from tests.room_link_seed import seed_room_items, seed_room_links
from tests.scale_seed import seed_account
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.records import LinkDoc, RoomDoc
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import accounts, link_counts
from vaultd.services.common import background
from vaultd.services.common.batches import DELETE_BATCH, WINDOW
from vaultd.services.files import deletions
from vaultd.services.files.blobs import BlobStore
from vaultd.services.links import links, revoke_jobs
from vaultd.services.rooms import records, room_deletions, room_links
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database

LINKS = 400


@dataclass
class WriteFilters(monitoring.CommandListener):
    """The filters of the updates and deletes sent while `recording` is on."""

    recording: bool = False
    sent: list[Query] = field(default_factory=list)
    reads: list[Query] = field(default_factory=list)  # the filters of the finds, likewise

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.recording and event.command_name == "find":
            self.reads.append(Query(str(event.command["find"]), dict(event.command["filter"])))
        if not self.recording or event.command_name not in ("update", "delete"):
            return
        statements = event.command.get("updates") or event.command.get("deletes") or []
        for statement in statements:
            self.sent.append(Query(str(event.command[event.command_name]), dict(statement["q"])))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    async def record(self, work: Awaitable[Any]) -> None:
        """Forgets what was recorded, then records what `work` sends."""
        self.sent.clear()
        self.reads.clear()
        self.recording = True
        try:
            await work
        finally:
            self.recording = False


# One embedded database for the module, its commands told to the module's own listener.
server, db = recorded_database.server, recorded_database.db


@pytest.fixture(scope="module")
def writes() -> WriteFilters:
    return WriteFilters()


@pytest.fixture(scope="module")
def recorder(writes: WriteFilters) -> WriteFilters:
    return writes  # what recorded_database's `db` listens through


async def _most_examined_by_link_writes(
        db: Db, writes: WriteFilters, collections: tuple[str, ...] = ("links", "link_stats"),
        queries: list[Query] | None = None) -> int:
    """The most documents one recorded update or delete of links (or one of `queries`) made the
    database read."""
    sent = [query for query in (writes.sent if queries is None else queries)
            if query.collection in collections]
    assert sent, "no write of links was recorded"
    return max([await examined(db, query) for query in sent])


async def test_a_revoke_alls_marking_writes_links_by_index(db: Db, writes: WriteFilters) -> None:
    seeded = await seed_account(db, "Marked Co", files=1, entries=0, links=LINKS)
    assert await revoke_jobs.revoke_all(db, seeded.account_id, seeded.busy_file,
                                        owner="vaultd-test") == seeded.live_links
    await writes.record(revoke_jobs.all_marked())
    assert await db.links.count_documents({"fileId": seeded.busy_file, "revoked": False}) == 0
    assert await _most_examined_by_link_writes(db, writes) <= revoke_jobs.WRITE_BATCH


async def test_a_deletions_clean_up_deletes_links_by_index(
        db: Db, writes: WriteFilters, tmp_path: Path) -> None:
    seeded = await seed_account(db, "Cleaned Co", files=1, entries=0, links=LINKS)
    await db.raw("link_stats").insert_many(
        [{"_id": f"{seeded.busy_file}-{n}", "fileId": seeded.busy_file} for n in range(50)])
    store = BlobStore(LocalBackend(tmp_path / "blobs"), MasterKeyring.generate())
    await deletions.delete_file(db, store, seeded.account_id, seeded.busy_file, owner="vaultd-t")
    await writes.record(background.settled())
    assert await db.links.count_documents({"fileId": seeded.busy_file}) == 0
    assert await _most_examined_by_link_writes(db, writes) <= DELETE_BATCH


async def test_a_link_born_of_a_revoked_generation_is_replaced_and_never_marked_live(
        db: Db) -> None:
    account, file_id = await account_with_file(db)
    tokens = await new_links(db, account, file_id, 5)
    file = await db.files.find_one({"_id": file_id}, revoke_jobs.HOLDER_FIELDS)
    assert file is not None
    job = await revoke_jobs._start(db, dict(file), account.id, 5, utcnow(), "vaultd-test")
    # A creation that read the file before the raise inserts its link under the old generation.
    late: LinkDoc = {"_id": "late-link", "hash": digest(new_token()), "accountId": account.id,
                     "fileId": file_id, "viewerEmail": "kim@example.com", "viewerName": "Kim",
                     "createdAt": utcnow(), "expiresAt": utcnow().replace(year=2100),
                     "revoked": False, "sessionsOpened": 0}
    await db.links.insert_one(late)
    assert await revoke_jobs._raise_generation(db, dict(file), job)
    await revoke_jobs.settle(db, job)
    # Its count is refused: the record goes (its token was never shown), nothing is counted.
    assert not await links._counted(db, late)
    assert await db.links.find_one({"_id": "late-link"}) is None
    # The creation's next try is of the new generation, and the marking leaves it live.
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", 3600)
    fresh, _ = await links.create_link(db, account, request)
    await revoke_jobs.mark(db, job)
    assert await live_by_truth(db, [fresh]) == 1
    assert await live_by_truth(db, tokens) == 0
    assert await link_counts.file_live(db, file_id) == 1
    assert await link_counts.account_live(db, account.id) == 1


async def _room_with_bystander(db: Db, name: str) -> tuple[str, RoomDoc]:
    """A room with LINKS links and 60 items, beside another room's links: a step that scanned
    instead of using an index would read those too."""
    account = await accounts.create_account(db, name, "business")
    bystander = await records.create_room(db, account, "Bystander")
    await seed_room_links(db, account.id, bystander["_id"], LINKS // 2)
    room = await records.create_room(db, account, "Deal room")
    await seed_room_links(db, account.id, room["_id"], LINKS)
    await seed_room_items(db, account.id, room["_id"], 60)
    await seed_room_items(db, account.id, bystander["_id"], 60)
    return account.id, await records.get_room(db, account.id, room["_id"])


async def test_a_rooms_revoke_all_marks_and_reads_its_links_by_index(
        db: Db, writes: WriteFilters) -> None:
    _, room = await _room_with_bystander(db, "Marked Room Co")
    assert await room_links.revoke_all(db, room, "vaultd-test") == LINKS
    await writes.record(revoke_jobs.all_marked())
    assert await db.room_links.count_documents({"roomId": room["_id"], "revoked": False}) == 0
    assert await _most_examined_by_link_writes(db, writes, ("room_links",)
                                               ) <= revoke_jobs.WRITE_BATCH
    assert await _most_examined_by_link_writes(db, writes, ("room_links",), writes.reads
                                               ) <= revoke_jobs.BATCH


async def test_a_rooms_deletions_clean_up_deletes_and_reads_by_index(
        db: Db, writes: WriteFilters) -> None:
    account_id, room = await _room_with_bystander(db, "Cleaned Room Co")
    await room_deletions.delete_room(db, account_id, room["_id"], "vaultd-test")
    await writes.record(background.settled())
    assert await db.room_links.count_documents({"roomId": room["_id"]}) == 0
    assert await db.room_items.count_documents({"roomId": room["_id"]}) == 0
    rooms = ("room_links", "room_items")
    assert await _most_examined_by_link_writes(db, writes, rooms) <= DELETE_BATCH
    assert await _most_examined_by_link_writes(db, writes, rooms, writes.reads) <= WINDOW


def test_the_step_size_halves_after_a_slow_step_and_grows_back_one_at_a_time() -> None:
    slow, quick = background.SLOW_STEP_SECONDS * 1.5, background.SLOW_STEP_SECONDS * 0.9
    size = background.StepSize(8)
    sizes = []
    for seconds in [quick, slow, slow, slow, slow, quick]:
        size.took(seconds)
        sizes.append(size.size)
    assert sizes == [8, 4, 2, 1, 1, 1]  # never below one
    for _ in range(background.QUICK_STEPS_TO_GROW - 1):
        size.took(quick)
    assert size.size == 2
    for _ in range(background.QUICK_STEPS_TO_GROW - 1):
        size.took(quick)
    size.took(slow)  # halves it, and starts the count again
    for _ in range(background.QUICK_STEPS_TO_GROW - 1):
        size.took(quick)
    assert size.size == 1
    for _ in range(background.QUICK_STEPS_TO_GROW * 20):
        size.took(quick)
    assert size.size == 8  # never above its most


async def _marked_step_sizes(db: Db, writes: WriteFilters, name: str) -> tuple[list[int], int]:
    """A revoke-all of a file's 120 links, then its marking: the links each update wrote, and
    how many reads of links the marking sent."""
    seeded = await seed_account(db, name, files=1, entries=0, links=120)
    assert await revoke_jobs.revoke_all(db, seeded.account_id, seeded.busy_file,
                                        owner="vaultd-test") == seeded.live_links
    await writes.record(revoke_jobs.all_marked())
    assert await db.links.count_documents({"fileId": seeded.busy_file, "revoked": False}) == 0
    sizes = [len(query.filter["_id"]["$in"]) for query in writes.sent
             if query.collection == "links"]
    return sizes, len([query for query in writes.reads if query.collection == "links"])


async def test_a_marking_writes_one_link_a_step_once_its_steps_are_slow(
        db: Db, writes: WriteFilters, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "SLOW_STEP_SECONDS", 0.0)  # every step is slow
    sizes, _ = await _marked_step_sizes(db, writes, "Slow Co")
    assert sizes[0] <= revoke_jobs.WRITE_BATCH and sizes[1] <= revoke_jobs.WRITE_BATCH // 2
    assert sizes[2:] == [1] * (len(sizes) - 2)
    assert len(sizes) > 100


async def test_a_marking_of_quick_steps_writes_its_most_a_step(
        db: Db, writes: WriteFilters, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "SLOW_STEP_SECONDS", 60.0)  # no step is slow
    sizes, reads = await _marked_step_sizes(db, writes, "Quick Co")
    assert max(sizes) == revoke_jobs.WRITE_BATCH
    # Fewer only at the end of a read's live or expired links: two per read at most.
    assert len([size for size in sizes if size < revoke_jobs.WRITE_BATCH]) <= 2 * reads

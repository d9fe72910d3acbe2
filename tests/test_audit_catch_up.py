"""The audit sequencer's catch-up (services.audit.catch_up) over a log written before it ran:
whatever the log's shape (one burst of 2,000 entries in a second, a quiet year, a year in
bursts with a millisecond holding more than a window), no read of a round returns more than
`READ_BATCH` entries (or one millisecond's), every entry is sequenced once, in its account in
(time, key) order, and each account's root is the one computed here from the entries. Also the
first round of a sequencer whose cursors are a day behind, a take-over in the middle of a
catch-up (the old holder committed a round it never saved), the log's numbering kept on the
fence's horizon while the cursors trail it, and a burst during a catch-up that outlasted
`CATCH_UP_AFTER`, planned again.

A real sequencer on a database of its own on the test worker's SecantusDB; what every `find`
on the logs returns (its first batch and every `getMore`) is counted by the driver's monitoring.
The windows, the walk's batch and the round's cap are smaller than the defaults here (200, 100
and 2,000 against 300, 200 and 6,000), and so are the logs: every bound is a multiple of a
window, as at the defaults, and a shape costs seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from pymongo import monitoring

from tests.embedded_database import recorded_worker_db
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import Db
from vaultd.services.audit import blocks, catch_up, lease, leaves, tree_writes
from vaultd.services.audit.keys import current_signer
from vaultd.services.audit.sequencer import Sequencer, SequencerConfig
from vaultd.services.common import log_fence
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # logs of 1,000 to 2,300 entries, sequenced and verified

RING = MasterKeyring.generate()
ORIGIN = "test.example/audit"
ACCOUNTS = ("acct-catch-a", "acct-catch-b", "acct-catch-c")
LOGS = ("access_log", "activity")
YEAR = timedelta(days=365)


@dataclass
class Read:
    collection: str
    filter: dict[str, Any]
    returned: int = 0


@dataclass
class Returned(monitoring.CommandListener):
    """Every find on the logs and how many documents it returned, over all its batches."""

    reads: list[Read] = field(default_factory=list)
    _sent: dict[int, Read] = field(default_factory=dict)  # by request id
    _cursors: dict[int, Read] = field(default_factory=dict)  # by cursor id

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        command = event.command
        if event.command_name == "find" and command["find"] in LOGS:
            self.reads.append(Read(command["find"], dict(command.get("filter") or {})))
            self._sent[event.request_id] = self.reads[-1]
        elif event.command_name == "getMore" and command["getMore"] in self._cursors:
            self._sent[event.request_id] = self._cursors[command["getMore"]]

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        read = self._sent.pop(event.request_id, None)
        if read is not None:
            cursor = event.reply["cursor"]
            read.returned += len(cursor.get("firstBatch", cursor.get("nextBatch", [])))
            if cursor["id"]:
                self._cursors[cursor["id"]] = read

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._sent.pop(event.request_id, None)


@pytest.fixture(autouse=True)
def tenth_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catch_up, "READ_BATCH", 200)
    monkeypatch.setattr(catch_up, "WALK_BATCH", 100)
    monkeypatch.setattr(catch_up, "ROUND_CAP", 2_000)


@pytest.fixture
def returned() -> Returned:
    return Returned()


@pytest.fixture
async def db(returned: Returned) -> AsyncIterator[Db]:
    async with recorded_worker_db("audit_catch_up", returned) as database:
        yield database


def sequencer(db: Db, holder: str, lease_seconds: float = 60.0) -> Sequencer:
    config = SequencerConfig(0.05, 0.05, lease_seconds, 10**9, 10**6, ORIGIN)
    return Sequencer(db, lambda: current_signer(db, RING, ORIGIN), config, holder)


def entry(at: datetime, n: int) -> dict[str, Any]:
    """An access-log entry as `access_log.record` writes it (without the fence's mark: written
    before the sequencer ran, as a restored or imported log is)."""
    return {"_id": str(uuid.uuid4()), "accountId": ACCOUNTS[n % 3], "fileId": f"file-{n % 5}",
            "action": "page", "page": n % 40 + 1, "viewerEmail": "v@client.example", "at": at}


def event(at: datetime, n: int) -> dict[str, Any]:
    """A members' activity event as the activity log stores it."""
    return {"_id": uuid.uuid4().hex, "accountId": ACCOUNTS[n % 3], "at": at,
            "actor": {"kind": "member", "id": "m1", "label": "Ann Admin"},
            "action": "member.role_changed", "target": f"member-{n}"}


def burst(end: datetime, count: int = 2_000) -> list[datetime]:
    """`count` entries in one second."""
    return [end - timedelta(milliseconds=random.randrange(1000)) for _ in range(count)]


def quiet_year(end: datetime) -> list[datetime]:
    return [end - YEAR * random.random() for _ in range(12)]


def year_in_bursts(end: datetime) -> list[datetime]:
    """Twelve bursts of 80 entries over a year, and one millisecond holding 250."""
    times = [end - YEAR * (month / 12) - timedelta(seconds=5 * random.random())
             for month in range(1, 13) for _ in range(80)]
    one = end - timedelta(days=100)
    return times + [one.replace(microsecond=one.microsecond // 1000 * 1000)] * 250


async def seed(db: Db, times: list[datetime], events: int = 0) -> list[datetime]:
    """The entries at `times` and `events` activity events among them; every stamp written."""
    docs = [entry(at, n) for n, at in enumerate(times)]
    await db.raw("access_log").insert_many(docs)
    stamps = [times[n * 7 % len(times)] for n in range(events)]
    if events:
        await db.raw("activity").insert_many([event(at, n) for n, at in enumerate(stamps)])
    return times + stamps


async def rounds_until_done(running: Sequencer) -> int:
    """Rounds until a round sequences nothing and no catch-up is left; how many ran."""
    for count in range(1, 200):
        if not await running.round() and running.backlog is None:
            return count
    raise AssertionError("the sequencer never caught up")


def milliseconds(times: list[datetime]) -> int:
    """The most entries one millisecond holds."""
    held: dict[datetime, int] = {}
    for at in times:
        key = at.replace(microsecond=at.microsecond // 1000 * 1000)
        held[key] = held.get(key, 0) + 1
    return max(held.values())


def rfc6962_root(hashes: list[bytes]) -> bytes:
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    split = 1 << ((len(hashes) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + rfc6962_root(hashes[:split])
                          + rfc6962_root(hashes[split:])).digest()


async def assert_sequenced_once_in_order(db: Db) -> int:
    """Every log entry has exactly one committed index, its position in its account's
    (time, key) order, and every account's root is the RFC 6962 root of those leaves. How many
    entries the trees hold."""
    by_account: dict[str, list[tuple[datetime, str, bytes]]] = {}
    for kind, collection in (("access", "access_log"), ("activity", "activity")):
        async for doc in db.raw(collection).find({}):
            key = leaves.source_key(kind, doc["_id"])
            by_account.setdefault(doc["accountId"], []).append(
                (doc["at"], key, tree_writes.leaf(kind, doc)))
    total = 0
    for account_id, entries in by_account.items():
        entries.sort(key=lambda one: (one[0], one[1]))
        tree = await db.audit_trees.find_one({"_id": account_id})
        assert tree is not None and tree["size"] == len(entries), (account_id, tree)
        keys = [key for _, key, _ in entries]
        indexes = await blocks.committed_indexes(db, keys, {account_id: tree["size"]})
        assert [indexes.get(key) for key in keys] == list(range(len(entries)))
        hashes = [hashlib.sha256(b"\x00" + leaf).digest() for _, _, leaf in entries]
        assert bytes(tree["root"]) == rfc6962_root(hashes)
        total += len(entries)
    return total


def assert_bounded(reads: list[Read], times: list[datetime]) -> None:
    """No read returned more than a window may hold, and each read by time was a closed range
    but those of what arrived since the newest entry read: nothing arrives here, so they find
    that entry's millisecond again at most."""
    most = max(catch_up.READ_BATCH, milliseconds(times))
    assert reads and max(read.returned for read in reads) <= most, sorted(
        read.returned for read in reads)[-5:]
    for read in reads:
        if "at" in read.filter and set(read.filter["at"]) != {"$gte", "$lt"}:
            assert read.returned <= milliseconds(times), read


@pytest.mark.parametrize("shape", [burst, quiet_year, year_in_bursts])
async def test_a_first_round_over_a_log_reads_it_in_bounded_windows(
        db: Db, returned: Returned, shape: Any) -> None:
    times = shape(utcnow() - timedelta(seconds=1))
    stamps = await seed(db, times, events=30)
    running = sequencer(db, "holder-1")
    await rounds_until_done(running)
    assert_bounded(returned.reads, stamps)
    assert await assert_sequenced_once_in_order(db) == len(times) + 30


async def test_a_round_sequences_at_most_the_cap_and_saves_where_it_reached(
        db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catch_up, "ROUND_CAP", 500)
    times = burst(utcnow() - timedelta(seconds=1), 1_000)
    await seed(db, times)
    running = sequencer(db, "holder-1")
    sequenced = [await running.round() for _ in range(2)]
    # Two windows of up to 200 (cut between two milliseconds): a third would pass the cap.
    assert all(300 < count <= 400 for count in sequenced), sequenced
    saved = await db.audit_sequencer.find_one({"_id": lease.LEASE_ID})
    assert saved is not None and running.backlog is not None
    reached = saved["cursors"]["access.looked"]
    assert saved["cursors"]["access"] < reached  # the newest entry read, in the last window
    assert await db.access_log.count_documents({"at": {"$lt": reached}}) == sum(sequenced)
    await rounds_until_done(running)
    assert await assert_sequenced_once_in_order(db) == len(times)


async def test_a_take_over_in_a_catch_up_sequences_nothing_twice(
        db: Db, returned: Returned, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catch_up, "ROUND_CAP", 400)
    times = year_in_bursts(utcnow() - timedelta(seconds=1))
    stamps = await seed(db, times, events=50)
    first = sequencer(db, "holder-1")
    assert await first.round() > 0
    unsaved = lease.save_cursors

    async def killed_before_saving(*_: Any) -> bool:  # the old holder dies after its commit
        return True
    monkeypatch.setattr(lease, "save_cursors", killed_before_saving)
    assert await first.round() > 0
    monkeypatch.setattr(lease, "save_cursors", unsaved)
    await lease.release(db, "holder-1")
    second = sequencer(db, "holder-2")
    # It plans from the saved cursors, so it reads the windows the first holder committed and
    # did not save again, and finds them all committed (looked up: `unsure`).
    assert await second.round() == 0
    assert second.epoch == first.epoch + 1 and second.unsure
    assert await second.round() > 0
    assert await first.round() == 0  # the old holder no longer holds the lease
    await rounds_until_done(second)
    assert not second.unsure  # caught up: looking entries up ends with it
    assert_bounded(returned.reads, stamps)
    assert await assert_sequenced_once_in_order(db) == len(times) + 50


async def test_a_sequencer_a_day_behind_catches_up_and_numbers_behind_the_fence(
        db: Db, returned: Returned, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catch_up, "ROUND_CAP", 400)
    now = utcnow()
    before = [now - timedelta(days=2, seconds=n) for n in range(30)]
    await seed(db, before)
    running = sequencer(db, "holder-1")
    await rounds_until_done(running)
    await lease.release(db, "holder-1")
    day_ago = now - timedelta(days=1)
    await db.audit_sequencer.update_one({"_id": lease.LEASE_ID}, {"$set": {"cursors": {
        "access": day_ago, "access.looked": day_ago, "activity": day_ago,
        "activity.looked": day_ago}}})  # back after a day's outage
    during = [now - timedelta(hours=23) + timedelta(seconds=n * 30) for n in range(900)]
    await seed(db, during)
    returned.reads.clear()
    back = sequencer(db, "holder-2")
    numbered_to: list[datetime] = []

    class Numbering:
        settled = True

        async def __call__(self, horizon: datetime) -> int:
            numbered_to.append(horizon)
            return 0
    back.numbering = Numbering()
    await back.round()
    fence = (await log_fence.horizons(db, ["access_log"]))["access_log"]
    saved = await db.audit_sequencer.find_one({"_id": lease.LEASE_ID})
    assert saved is not None and back.backlog is not None  # a catch-up, cut by windows
    assert saved["cursors"]["access.looked"] < fence - timedelta(hours=1)
    # The numbering is not held a day back with the cursors (the fence keeps milliseconds).
    assert len(numbered_to) == 1 and abs(numbered_to[0] - fence) < timedelta(milliseconds=1)
    await rounds_until_done(back)
    assert_bounded(returned.reads, during)
    assert await assert_sequenced_once_in_order(db) == len(before) + len(during)


async def test_what_arrives_during_a_long_catch_up_is_planned_again_not_read_whole(
        db: Db, returned: Returned, monkeypatch: pytest.MonkeyPatch) -> None:
    """A catch-up that outlasts `CATCH_UP_AFTER` (a second here: 10^6 entries at 20,000 a
    round take longer than ten minutes) ends with a second plan of what arrived meanwhile, so
    a burst during it is read in windows too, not in the finishing round's one open read."""
    monkeypatch.setattr(catch_up, "ROUND_CAP", 400)
    monkeypatch.setattr(catch_up, "CATCH_UP_AFTER", timedelta(seconds=1))
    times = burst(utcnow() - timedelta(seconds=1), 1_000)
    stamps = await seed(db, times)
    running = sequencer(db, "holder-1")
    assert await running.round() > 0 and running.backlog is not None
    first_plan = running.backlog
    # Three windows' worth, stamped in the second after the plan's horizon (the fence stands
    # there: nothing lands before it), then the rounds' horizons pass the plan's by more than
    # a second.
    meanwhile = burst(utcnow() + timedelta(seconds=1), 600)
    stamps += await seed(db, meanwhile)
    await asyncio.sleep(2.5)
    await rounds_until_done(running)
    assert running.backlog is None or running.backlog is not first_plan
    assert_bounded(returned.reads, stamps)
    assert await assert_sequenced_once_in_order(db) == len(times) + len(meanwhile)

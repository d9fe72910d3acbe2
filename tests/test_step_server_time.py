"""A background step is sized by the database's own time for it, not by the round trip
(`vaultd.db_server_time`). The embedded SecantusDB as vaultd runs it (`vaultd.secantus_server`)
adds that time to every write's reply; when vaultd is slow to take each reply (a loaded
machine's wait for a CPU, made here by the driver's listener holding the event loop 30 ms as
each marking step's reply arrives, so that every round trip passes the 25 ms slow mark), a
revoke-all's marking tells each step's size the server's time from the reply, and keeps its
steps at `WRITE_BATCH` links where the round trip would cut them to one (unless the server's
own time was slow too, as a loaded machine may make it: then halving is right). On the test
worker's shared SecantusDB.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import pytest
from pymongo import monitoring

from tests.recorded_database import worker_db
from tests.scale_seed import seed_account
from vaultd.db import Db
from vaultd.db_server_time import SERVER_MILLIS, step_seconds
from vaultd.services.common import background
from vaultd.services.common.background import SLOW_STEP_SECONDS
from vaultd.services.links import revoke_jobs

db = worker_db
LINKS = 120  # 60 live: 12 steps of WRITE_BATCH


@dataclass
class MarkingSteps(monitoring.CommandListener):
    """How many links each update of the links sent while `recording` names (its `$in`); and
    each one's reply taken `late` seconds late, the event loop held meanwhile."""

    recording: bool = False
    late: float = 0.0
    sizes: list[int] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)  # each update's time in the server
    _updates: set[int] = field(default_factory=set)  # request ids

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.recording and event.command_name == "update" and event.command["update"] == "links":
            self._updates.add(event.request_id)
            for statement in event.command["updates"]:
                self.sizes.append(len(statement["q"]["_id"]["$in"]))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.request_id in self._updates:
            self._updates.discard(event.request_id)
            self.server_ms.append(float(event.reply.get(SERVER_MILLIS, -1)))
            time.sleep(self.late)  # blocking on purpose: the loop busy as on a loaded machine

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture(scope="module")
def recorder() -> MarkingSteps:
    return MarkingSteps()


async def test_a_writes_reply_carries_its_time_in_the_server(db: Db) -> None:
    collection = db.raw("step_time")
    await collection.insert_many([{"_id": n, "n": n % 2} for n in range(200)])
    started = time.monotonic()
    result = await collection.update_many({"n": 1}, {"$set": {"m": 2}})
    round_trip = time.monotonic() - started
    assert result.modified_count == 100
    millis = result.raw_result[SERVER_MILLIS]
    assert 0 < millis / 1000 <= round_trip
    assert step_seconds(result.raw_result, round_trip) == millis / 1000
    # A reply that says nothing, or more than can be, leaves the round trip.
    assert step_seconds({"n": 1, "ok": 1.0}, round_trip) == round_trip
    assert step_seconds({SERVER_MILLIS: round_trip * 2000}, round_trip) == round_trip


async def test_a_slow_event_loop_does_not_shrink_the_marking_steps(
        db: Db, recorder: MarkingSteps, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded = await seed_account(db, "Step Clock Co", files=1, entries=0, links=LINKS)
    every = await db.links.count_documents({"fileId": seeded.busy_file})
    clocked: list[float] = []  # what each step's size was told it took

    class RecordedSteps(background.StepSize):
        def took(self, seconds: float) -> None:
            clocked.append(seconds)
            super().took(seconds)

    monkeypatch.setattr(background, "StepSize", RecordedSteps)
    recorder.sizes.clear()
    recorder.server_ms.clear()
    recorder.recording, recorder.late = True, 0.03
    try:
        await revoke_jobs.revoke_all(db, seeded.account_id, seeded.busy_file, owner="vaultd-t")
        await revoke_jobs.all_marked()
    finally:
        recorder.recording, recorder.late = False, 0.0
    assert await db.links.count_documents({"fileId": seeded.busy_file, "revoked": False}) == 0
    sizes, server_ms = recorder.sizes, recorder.server_ms
    assert sum(sizes) == every, sizes  # every link marked once, live or expired
    # The round trips all passed the slow mark (30 ms and more): each step was timed by the
    # database's own time for it instead, as its reply says.
    assert clocked == [ms / 1000 for ms in server_ms], (clocked, server_ms)
    assert min(server_ms) >= 0, server_ms
    # So the steps keep their size, unless the database itself was slow (a loaded machine's
    # CPU, which the server's time includes: then the size halves, as it should).
    if max(server_ms) <= SLOW_STEP_SECONDS * 1000:
        assert statistics.median(sizes) == revoke_jobs.WRITE_BATCH, sizes

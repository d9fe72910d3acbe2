"""A gate's rate window (code sends, wrong passcodes, sessions per address) is rolling: at most
its limit in any hour, whenever the events fall, and the clock's hour resets nothing. Its record
is dropped by the database once its last event is out of the window: the counters do not grow
with a vault's age. Against a real embedded SecantusDB, whose TTL pass is run at once through
its admin command."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.embedded_database import running_database, vault_db
from vaultd import embedded_db
from vaultd.db import Db
from vaultd.services.gates import counters

pytestmark = pytest.mark.slow  # its own database server

HOUR = 3600


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded_db.EmbeddedServer]:
    with running_database(tmp_path_factory.mktemp("gates-ttl") / "db") as running:
        yield running


@pytest.fixture
async def db(server: embedded_db.EmbeddedServer) -> AsyncIterator[Db]:
    async with vault_db(server) as database:
        yield database


async def test_a_window_that_is_over_is_dropped_and_a_current_one_is_kept(db: Db) -> None:
    assert await counters.take(db, "sends:link-a", limit=2, window_seconds=1)
    assert await counters.take(db, "sends:link-b", limit=2, window_seconds=HOUR)
    raw = db.raw(counters.COLLECTION)
    assert await raw.count_documents({"_id": {"$in": ["sends:link-a", "sends:link-b"]}}) == 2
    over = await raw.find_one({"_id": "sends:link-a"})
    assert over is not None
    await raw.update_one({"_id": over["_id"]},
                         {"$set": {"expiresAt": over["expiresAt"].replace(year=2000)}})
    await db.client.admin.command("secantusAdmin.pruneTtl")
    left = [doc["_id"] async for doc in raw.find({"_id": {"$regex": "^sends:"}}, {"_id": 1})]
    assert left == ["sends:link-b"], left


async def test_the_hour_boundary_resets_nothing(db: Db) -> None:
    """The attack on a window reset on the hour: 30 tries at 21:59:50, 30 more at 22:00:05."""
    before = datetime(2026, 11, 28, 21, 59, 50, tzinfo=UTC)
    after = before + timedelta(seconds=15)
    allowed = [await counters.take(db, "passcode:boundary", 30, HOUR, now=before + timedelta(
        milliseconds=n)) for n in range(30)]
    assert allowed == [True] * 30
    assert not await counters.take(db, "passcode:boundary", 30, HOUR, now=after)
    # Refused tries are not counted: one hour after the first, exactly one more is allowed.
    hour_later = before + timedelta(seconds=HOUR, milliseconds=0.5)
    assert await counters.take(db, "passcode:boundary", 30, HOUR, now=hour_later)
    assert not await counters.take(db, "passcode:boundary", 30, HOUR, now=hour_later)


async def test_concurrent_events_never_pass_the_limit_together(db: Db) -> None:
    verdicts = await asyncio.gather(*(counters.take(db, "sessions:race", 5, HOUR)
                                      for _ in range(12)))
    assert sorted(verdicts) == [False] * 7 + [True] * 5


def test_an_ipv6_client_is_counted_by_its_slash_64() -> None:
    assert counters.address_key("2001:db8:1:2::7") == counters.address_key("2001:db8:1:2:ffff::1")
    assert counters.address_key("2001:db8:1:3::7") != counters.address_key("2001:db8:1:2::7")
    assert counters.address_key("203.0.113.7") == "203.0.113.7"
    assert counters.address_key(None) == counters.UNKNOWN_ADDRESS

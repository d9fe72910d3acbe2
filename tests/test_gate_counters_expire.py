"""A gate's rate window (code sends per link and IP, wrong passcodes) is dropped by the
database once it is over: the counters do not grow with a vault's age. Against a real embedded
SecantusDB, whose TTL pass is run at once through its admin command."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.embedded_database import running_database, vault_db
from vaultd import embedded_db
from vaultd.db import Db
from vaultd.services.gates import counters

pytestmark = pytest.mark.slow  # its own database server


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
    assert await counters.take(db, "sends:link-b", limit=2, window_seconds=3600)
    raw = db.raw(counters.COLLECTION)
    assert await raw.count_documents({}) == 2
    over = await raw.find_one({"_id": {"$regex": "^sends:link-a:"}})
    assert over is not None
    await raw.update_one({"_id": over["_id"]},
                         {"$set": {"expiresAt": over["expiresAt"].replace(year=2000)}})
    await db.client.admin.command("secantusAdmin.pruneTtl")
    left = [doc["_id"] async for doc in raw.find({}, {"_id": 1})]
    assert len(left) == 1 and left[0].startswith("sends:link-b:"), left

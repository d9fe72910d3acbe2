"""Indexes vaultd no longer declares (`vaultd.db_indexes.RETIRED`) leave a database made with
them at the next start, once, however many processes start at once; and a revoke-all's marking
writes nothing the retired `links (revokedBatch, _id)` held, so each link it marks moves the
entries of the 7 indexes holding `revoked` or `listed` and no more. Against a real embedded
SecantusDB, through `ensure_indexes` as vaultd runs it at start-up."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.embedded_database import running_database, vault_db
from tests.scale_seed import seed_account
from vaultd.db import connect
from vaultd.db_indexes import RETIRED, declared_indexes, drop_retired, ensure_indexes
from vaultd.services.links import revoke_jobs

pytestmark = pytest.mark.slow  # starts its own database server

OLD_INDEX = "revokedBatch_1__id_1"


def _default_name(keys: Any) -> str:
    return "_".join(f"{field}_{way}" for field, way in keys)


def _moved(indexes: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]
           ) -> list[str]:
    """The indexes whose entry for a link differs between two of its versions (links' indexes
    are plain: no arrays, no partial filters)."""
    return sorted(name for name, spec in indexes.items()
                  if [before.get(field) for field, _ in spec["key"]]
                  != [after.get(field) for field, _ in spec["key"]])


def test_no_retired_index_is_declared_again() -> None:
    declared = {(one.collection, dict(one.options).get("name", _default_name(one.keys)))
                for one in declared_indexes()}
    assert ("links", OLD_INDEX) in RETIRED
    assert sorted(declared & set(RETIRED)) == []  # else every start would drop and build it


async def test_a_database_made_with_the_old_index_loses_it_at_the_next_start(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with running_database(tmp_path / "db") as server:
        async with vault_db(server) as db:  # a database of today's vaultd
            assert OLD_INDEX not in await db.raw("links").index_information()
            # As an older vaultd left it: the index built, links marked with their batch.
            made = await db.raw("links").create_index([("revokedBatch", 1), ("_id", 1)])
            assert made == OLD_INDEX
            await db.raw("links").insert_one({"_id": "old", "revokedBatch": "job-1"})
        starts = [connect(server.uri, "vaultd") for _ in range(4)]
        try:
            with caplog.at_level(logging.INFO, logger="vaultd.db"):
                # Four processes starting at once, each checking, then dropping.
                await asyncio.gather(*(ensure_indexes(start) for start in starts))
            indexes = await starts[0].raw("links").index_information()
            assert OLD_INDEX not in indexes
            assert "revoked_1__id_1" in indexes  # the declared ones stay
            dropped = [r.getMessage() for r in caplog.records if "retired" in r.getMessage()]
            assert dropped == [f"dropped the retired index {OLD_INDEX} of links"]
            # The next start has nothing to drop and says nothing.
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="vaultd.db"):
                await ensure_indexes(starts[0])
            assert [r for r in caplog.records if "retired" in r.getMessage()] == []
            assert await starts[0].raw("links").count_documents({}) == 1  # records untouched
        finally:
            for start in starts:
                await start.close()


async def test_a_retired_index_dropped_by_another_process_meanwhile_is_no_error(
        tmp_path: Path) -> None:
    with running_database(tmp_path / "db") as server:
        async with vault_db(server) as db:
            await db.raw("links").create_index([("revokedBatch", 1), ("_id", 1)])
            # Another process drops it between this one's look and its drop.
            raw = db.raw("links")
            look = raw.index_information

            async def looked_then_gone(*args: Any, **kwargs: Any) -> Any:
                found = await look(*args, **kwargs)
                await db.database["links"].drop_index(OLD_INDEX)
                return found

            raw.index_information = looked_then_gone  # type: ignore[method-assign]
            original = db.raw
            db.raw = lambda name: raw if name == "links" else original(name)  # type: ignore[method-assign]
            await drop_retired(db, [("links", OLD_INDEX)])
            # A collection never made: nothing to drop, no error either.
            await drop_retired(db, [("no_such_collection", OLD_INDEX)])
            assert OLD_INDEX not in await original("links").index_information()


async def test_a_revoke_all_marks_its_links_without_a_batch_and_moves_7_indexes_a_link(
        tmp_path: Path) -> None:
    with running_database(tmp_path / "db") as server:
        async with vault_db(server) as db:
            seeded = await seed_account(db, "Marked Co", files=1, entries=0, links=40)
            links = db.raw("links")
            before = {link["_id"]: link async for link in links.find({"fileId": seeded.busy_file})}
            revoked = await revoke_jobs.revoke_all(db, seeded.account_id, seeded.busy_file,
                                                   owner="vaultd-test")
            await revoke_jobs.all_marked()
            assert revoked == seeded.live_links
            after = {link["_id"]: link async for link in links.find({"fileId": seeded.busy_file})}
            assert all(link["revoked"] for link in after.values())
            assert await links.count_documents({"revokedBatch": {"$exists": True}}) == 0
            indexes = await links.index_information()
            moved = {tuple(_moved(indexes, before[one], after[one])) for one in after}
            assert moved == {("fileId_1_listed_1_expiresAt_1", "fileId_1_listed_1_seq_1",
                              "fileId_1_listed_1_shard_1_expiresAt_1",
                              "fileId_1_revoked_1", "fileId_1_revoked_1__id_1",
                              "fileId_1_revoked_1_expiresAt_1", "revoked_1__id_1")}, moved
            assert await db.raw(revoke_jobs.JOBS).count_documents({}) == 0

"""A revoke-all whose background marking is cut by a graceful stop: the answer stands (no page
of its links, the counts already taken), and the next start's recovery marks the rest of the
link records, once (`services.links.revoke_jobs`; `vaultd.main` stops the steps and forgets the
instance, so its jobs are resumed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.embedded_database import running_database, vault_db
from tests.http_helpers import LINK_GONE, assert_json_error
from tests.scale_seed import Seeded, seed_account
from tests.vault_process import running_vault
from tests.waiting import wait_until
from vaultd.db import Db
from vaultd.services.links import revoke_jobs

pytestmark = pytest.mark.slow  # starts, stops and restarts a vaultd

# Marked in ten reads of `revoke_jobs.BATCH` (50) and about a hundred writes of at most
# `WRITE_BATCH` (5), each followed by a rest as long as it took: a stop sent right after the
# answer cut the marking after its first write (1,000 links, load 5). More links only cost
# seeding and recovery; too few would fail the cut's `unmarked > 0`, never pass wrongly.
LINKS = 500


def test_a_revoke_alls_marking_cut_by_a_stop_is_finished_by_the_next_start(
        tmp_path: Path) -> None:
    with running_vault(tmp_path / "data", own_database=True,
                       VAULTD_RENDER_WORKERS="1") as vault:  # it renders no page
        async def seed(db: Db) -> Seeded:
            return await seed_account(db, "Stopped Co", files=1, entries=0, links=LINKS)

        seeded: Seeded = vault.run_service(seed)
        vault.secrets += [seeded.key, seeded.live_token]
        with vault.client(seeded.key) as api:
            answer = api.post(f"/files/{seeded.busy_file}/revoke-views")
            assert answer.json() == {"revoked": seeded.live_links}
            vault.stop()  # at once: the marking has barely begun

        async def state(db: Db) -> dict[str, Any]:
            account = await db.accounts.find_one({"_id": seeded.account_id})
            assert account is not None
            return {"unmarked": await db.links.count_documents(
                        {"fileId": seeded.busy_file, "revoked": False}),
                    "jobs": await db.raw(revoke_jobs.JOBS).count_documents({}),
                    "accountLive": account["linkCount"]["live"],
                    "entries": await db.access_log.count_documents(
                        {"fileId": seeded.busy_file, "action": "revoke"})}

        # Read while vaultd is down: its database started on its own.
        with running_database(vault.data_dir / "db") as server:
            async def read_cut() -> dict[str, Any]:
                async with vault_db(server) as db:
                    return await state(db)

            cut = asyncio.run(read_cut())
        assert cut["unmarked"] > 0 and cut["jobs"] == 1, cut  # stopped half way
        assert cut["accountLive"] == 0 and cut["entries"] == 1  # counted and logged already
        vault.start()  # recovery at start-up resumes the job
        done = wait_until(lambda: (s := vault.run_service(state))["jobs"] == 0 and s,
                          timeout=300, what="the marking finished")
        assert done == {"unmarked": 0, "jobs": 0, "accountLive": 0, "entries": 1}
        with vault.client(seeded.key) as api:
            assert_json_error(api.get(f"/views/{seeded.live_token}"), 404, LINK_GONE)
            assert api.get("/account").json()["usage"]["activeLinks"] == 0

"""A file's links by state (`GET /v1/files/:id/views?state=`, `services.links.link_states`):
every page of each state holds exactly that state's links, newest first, and its total is
exact, through what moves a link's state without a write to it (a revoke-all's generation, the
clock) and what does with one (a revoke, a spent link, a number given back).

Links are made and revoked through the services, on a database of this module's own on the test
worker's shared SecantusDB (`tests.recorded_database.worker_db`); the clock is stood in for by
setting a link's expiry in the past, as an operator could.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder
from tests.link_clock import set_expiry
from tests.link_states_helpers import STATES, account_with_file, every_page, expected, listed
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.services.accounts import link_counts
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import background
from vaultd.services.links import link_numbers, link_states, links, revoke_jobs
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

PER_PAGE = 4


async def _made(db: Db, account: Account, file_id: str, count: int) -> list[str]:
    """`count` new links of the file, oldest first."""
    request = links.LinkRequest(file_id, "ann@example.com", "Ann", 3600)
    for _ in range(count):
        await links.create_link(db, account, request)
    docs = await db.links.find({"fileId": file_id}, {"seq": 1}).to_list()
    return [doc["_id"] for doc in sorted(docs, key=lambda doc: doc["seq"])][-count:]


async def _expire(db: Db, link_ids: list[str]) -> None:
    """The clock passes their expiry (after the file's last sweep: the live count sees it)."""
    await set_expiry(db, {"_id": {"$in": link_ids}}, utcnow() - timedelta(milliseconds=1))


async def _assert_listed(db: Db, recorder: QueryRecorder, account: Account, file_id: str
                         ) -> dict[str, list[str]]:
    """Every state's pages against the records; returns what was expected."""
    want = await expected(db, file_id)
    for state in STATES:
        ids, total = await every_page(db, recorder, account.id, file_id, state, PER_PAGE)
        assert (ids, total) == (want[state], len(want[state])), state
    return dict(want)


async def test_each_state_is_listed_newest_first_with_its_exact_total(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await account_with_file(db, "States Co")
    made = await _made(db, account, file_id, 30)
    for link_id in made[::4]:  # revoked one by one: 8
        await links.revoke_link_id(db, account.id, file_id, link_id)
    await _expire(db, made[1::5])  # 6, of which made[16] was revoked before
    await links.revoke_link_id(db, account.id, file_id, made[21])  # expired, then revoked
    await link_states.spent(db, made[2])  # an open beyond its maxOpens was refused
    want = await _assert_listed(db, recorder, account, file_id)
    assert [len(want[state]) for state in STATES] == [16, 5, 9]
    assert await link_counts.file_live(db, file_id) == 16  # the spent link left the count
    # The expired ones are marked in the background; the listing answers the same after.
    await background.settled()
    marked = await db.links.find({"_id": {"$in": want["expired"]}}, {"listed": 1}).to_list()
    assert {doc["listed"] for doc in marked} == {"expired"}
    assert await _assert_listed(db, recorder, account, file_id) == want


async def test_a_revoke_all_moves_every_link_before_it_to_revoked_at_once(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await account_with_file(db, "Revoke All Co")
    made = await _made(db, account, file_id, 24)
    await links.revoke_link_id(db, account.id, file_id, made[3])
    await _expire(db, made[5:9])
    assert await revoke_jobs.revoke_all(db, account.id, file_id, "test") == 19
    revoke_jobs.stop_marking()  # the link records still say what they said before it
    unmarked = await db.links.count_documents({"fileId": file_id, "revoked": False})
    assert unmarked == 23
    want = await _assert_listed(db, recorder, account, file_id)
    assert [len(want[state]) for state in STATES] == [0, 0, 24]
    # Links made after it are of the new generation; revoked and expired as before.
    after = await _made(db, account, file_id, 10)
    await links.revoke_link_id(db, account.id, file_id, after[0])
    await links.revoke_link_id(db, account.id, file_id, made[0])  # already revoked: no change
    await _expire(db, after[1:3])
    want = await _assert_listed(db, recorder, account, file_id)
    assert want["revoked"][0] == after[0] and len(want["revoked"]) == 25
    assert [len(want[state]) for state in STATES] == [7, 2, 25]
    # Recovery marks the revoke-all's links; nothing the listing shows moves.
    job = await db.raw(revoke_jobs.JOBS).find_one({"fileId": file_id})
    assert job is not None
    assert await revoke_jobs.mark(db, job) == 23
    assert await _assert_listed(db, recorder, account, file_id) == want
    # A second revoke-all takes what the first left and the links made since.
    assert await revoke_jobs.revoke_all(db, account.id, file_id, "test") == 7
    await revoke_jobs.all_marked()
    want = await _assert_listed(db, recorder, account, file_id)
    assert [len(want[state]) for state in STATES] == [0, 0, 34]


async def test_a_number_given_back_across_a_revoke_all_leaves_the_totals_exact(
        db: Db, recorder: QueryRecorder) -> None:
    """A link's number is taken before its record is written; if a revoke-all comes between
    (the link is then made again under the new generation, `links._counted`) or the insert
    fails, the number is given back: out of the revoke-all's count if it took it."""
    account, file_id = await account_with_file(db, "Gaps Co")
    await _made(db, account, file_id, 5)
    taken = await link_numbers.reserve(db, account.id, file_id)  # no record written yet
    assert await revoke_jobs.revoke_all(db, account.id, file_id, "test") == 5
    noted = await db.files.find_one({"_id": file_id})
    assert noted is not None
    assert (noted["linkRevokedTo"], noted["linkRevokedCount"]) == (6, 6)
    await link_numbers.unreserve(db, file_id, int(taken["linkSeq"]))
    late = await link_numbers.reserve(db, account.id, file_id)  # taken after the revoke-all
    await _made(db, account, file_id, 2)
    await link_numbers.unreserve(db, file_id, int(late["linkSeq"]))
    await revoke_jobs.all_marked()
    want = await _assert_listed(db, recorder, account, file_id)
    assert [len(want[state]) for state in STATES] == [2, 0, 5]
    after = await db.files.find_one({"_id": file_id})
    assert after is not None and (after["linkTotal"], after["linkRevokedCount"]) == (7, 5)


async def test_a_deleted_or_foreign_files_links_are_not_found(
        db: Db, recorder: QueryRecorder) -> None:
    account, file_id = await account_with_file(db, "Deleted Co")
    other, _ = await account_with_file(db, "Stranger Co")
    await _made(db, account, file_id, 3)
    for state in STATES:
        with pytest.raises(NotFound, match=r"^file not found$"):
            await listed(db, recorder, other.id, file_id, state, 1, PER_PAGE)
    await db.files.update_one({"_id": file_id}, {"$set": {"state": "deleting"}})
    for state in STATES:
        with pytest.raises(NotFound, match=r"^file not found$"):
            await listed(db, recorder, account.id, file_id, state, 1, PER_PAGE)

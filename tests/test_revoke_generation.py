"""A file's revoke-all is one bounded write, whatever the number of its links
(`services.accounts.link_generations`, `services.links.revoke_jobs`): it sends the same few
commands for 20 links as for 1,000, no link of it is live from its answer on (by every read of
liveness the page path uses), the counts are exact at once and stay exact while the link records
are marked in the background, links created or revoked one by one during it are counted once,
and a job cut short by a crash is finished or dropped by recovery. Against a real embedded
SecantusDB, through the services."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from tests import link_generation_helpers, recorded_database
from tests.link_clock import set_expiry
from tests.link_generation_helpers import (
    CommandTally,
    account_with_file,
    add_file,
    live_by_truth,
    new_links,
)
from tests.scale_seed import Seeded, seed_account
from vaultd.db import Db
from vaultd.errors import NotFound
from vaultd.secrets import digest
from vaultd.services.accounts import accounts, api_keys, link_counts
from vaultd.services.links import links, revoke_jobs
from vaultd.services.links.link_records import LinkRecords
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database

# One embedded database for the module, its commands told to the module's own listener.
server, db = recorded_database.server, recorded_database.db
tally, recorder = link_generation_helpers.tally, link_generation_helpers.recorder


async def _stored_counts(db: Db, account_id: str, file_id: str) -> tuple[int, int]:
    """The raw counters (not the clamped reads, which would hide a double subtraction), after a
    read of each has swept what expired."""
    await link_counts.account_live(db, account_id)
    await link_counts.file_live(db, file_id)
    account = await db.accounts.find_one({"_id": account_id})
    file = await db.files.find_one({"_id": file_id})
    assert account is not None and file is not None
    return int(account["linkCount"]["live"]), int(file["linkCount"]["live"])


async def _revoke_counting(db: Db, tally: CommandTally, seeded: Seeded) -> tuple[int, Counter[str]]:
    tally.sent.clear()
    tally.recording = True
    try:
        revoked = await revoke_jobs.revoke_all(db, seeded.account_id, seeded.busy_file,
                                               owner="vaultd-test")
    finally:
        tally.recording = False  # before the background steps run: those are not the call's
    return revoked, Counter(tally.sent)


async def test_a_revoke_all_sends_the_same_few_commands_for_20_links_as_for_1000(
        db: Db, tally: CommandTally) -> None:
    small = await seed_account(db, "Few Links", files=1, entries=0, links=20)
    large = await seed_account(db, "Many Links", files=1, entries=0, links=1000)
    revoked_few, few = await _revoke_counting(db, tally, small)
    await revoke_jobs.all_marked()  # its background steps are not the next call's
    revoked_many, many = await _revoke_counting(db, tally, large)
    assert (revoked_few, revoked_many) == (small.live_links, large.live_links)
    assert few == many, (few, many)
    assert many["update links"] == 0  # no link record is written by the call itself
    assert sum(many.values()) <= 16, many
    await revoke_jobs.all_marked()
    assert await db.links.count_documents({"fileId": large.busy_file, "revoked": False}) == 0


async def test_no_read_of_liveness_finds_a_revoked_generations_link_live(db: Db) -> None:
    account, file_id = await account_with_file(db)
    tokens = await new_links(db, account, file_id, revoke_jobs.BATCH + 5)
    _, key = await api_keys.create_key(db, account.id)
    records = LinkRecords()
    kept = await records.open(db, tokens[0])  # as the page path keeps it for a second
    assert await links.revoke_file_links(db, account.id, file_id) == len(tokens)
    # Before the background steps reach the link records: the records still say live...
    assert await db.links.count_documents({"fileId": file_id, "revoked": False}) > 0
    # ...and no read the page path makes finds any of them live.
    assert await live_by_truth(db, tokens) == 0
    for token in tokens[:3]:
        with pytest.raises(NotFound):
            await records.open(db, token)
    with pytest.raises(NotFound):
        await records.confirm(db, kept)
    check = await api_keys.check_key(db, key, with_link=kept.link["_id"])
    assert check.link is not None and not links.is_live(check.link)
    assert not await links.still_open(db, kept)
    assert await _stored_counts(db, account.id, file_id) == (0, 0)
    await revoke_jobs.all_marked()
    assert await db.links.count_documents({"fileId": file_id, "revoked": False}) == 0
    entries = await db.access_log.count_documents({"fileId": file_id, "action": "revoke"})
    assert entries == 1
    # A link made afterwards is of the new generation: live, and counted.
    [fresh] = await new_links(db, account, file_id, 1)
    assert await live_by_truth(db, [fresh]) == 1
    assert await _stored_counts(db, account.id, file_id) == (1, 1)
    assert await links.revoke_file_links(db, account.id, file_id) == 1
    assert await live_by_truth(db, [fresh, *tokens]) == 0


async def test_the_counts_stay_exact_through_expiries_and_single_revokes_before_the_marking(
        db: Db) -> None:
    account, file_id = await account_with_file(db)
    other_file = await add_file(db, account)  # its links keep the account's count above 0
    await new_links(db, account, other_file, 3)
    tokens = await new_links(db, account, file_id, 6)
    # One expired before the revoke (not swept yet), one revoked by itself before it.
    await set_expiry(db, {"hash": digest(tokens[0])}, utcnow())
    await links.revoke_link(db, account.id, tokens[1])
    revoked = await revoke_jobs.revoke_all(db, account.id, file_id, owner="vaultd-test")
    assert revoked == 4
    # Before the marking: a link live at the revoke expires, and another is revoked by itself.
    await set_expiry(db, {"hash": digest(tokens[2])}, utcnow())
    await links.revoke_link(db, account.id, tokens[3])
    assert await _stored_counts(db, account.id, file_id) == (3, 0)
    await revoke_jobs.all_marked()
    await set_expiry(db, {"hash": digest(tokens[4])}, utcnow())
    assert await _stored_counts(db, account.id, file_id) == (3, 0)
    assert (await accounts.usage(db, account.id))["activeLinks"] == 3
    file = await db.files.find_one({"_id": file_id})
    assert file is not None and not file.get("linkRevokes")  # the note went with the job


async def test_links_made_and_revoked_during_revoke_alls_are_counted_once(db: Db) -> None:
    account, file_id = await account_with_file(db)
    tokens = await new_links(db, account, file_id, 10)
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", 3600)

    async def make() -> str:
        return (await links.create_link(db, account, request))[0]

    results = await asyncio.gather(
        *(make() for _ in range(12)),
        *(links.revoke_link(db, account.id, token) for token in tokens[:4]),
        revoke_jobs.revoke_all(db, account.id, file_id, owner="vaultd-test"),
        revoke_jobs.revoke_all(db, account.id, file_id, owner="vaultd-test"))
    made = [token for token in results[:12] if isinstance(token, str)]
    await revoke_jobs.all_marked()
    live = await live_by_truth(db, tokens + made)
    assert await _stored_counts(db, account.id, file_id) == (live, live)
    # Every link was either revoked once (by itself or with the file's) or is still live.
    total_revoked = sum(int(count) for count in results[16:] if isinstance(count, int))
    assert total_revoked + live + 4 >= len(tokens) + len(made) - 4


async def test_a_job_cut_after_its_write_is_finished_and_one_cut_before_is_dropped(
        db: Db) -> None:
    account, file_id = await account_with_file(db)
    tokens = await new_links(db, account, file_id, 7)
    file = await db.files.find_one({"_id": file_id}, revoke_jobs.HOLDER_FIELDS)
    assert file is not None
    # Cut before its write: recorded, never raised the generation.
    early = await revoke_jobs._start(db, dict(file), account.id, 7, utcnow(), "vaultd-gone")
    assert await revoke_jobs.resume_orphaned(db, {"vaultd-alive"}, "vaultd-alive") == 1
    assert await live_by_truth(db, tokens) == 7
    assert await _stored_counts(db, account.id, file_id) == (7, 7)
    assert await db.raw(revoke_jobs.JOBS).find_one({"_id": early["_id"]}) is None
    # Cut after it: the generation raised, nothing else done. Two processes recover at once:
    # one of them claims the job, and the counts are taken once.
    file = await db.files.find_one({"_id": file_id}, revoke_jobs.HOLDER_FIELDS)
    assert file is not None  # as the count reads above swept it
    job = await revoke_jobs._start(db, dict(file), account.id, 7, utcnow(), "vaultd-gone")
    assert await revoke_jobs._raise_generation(db, dict(file), job)
    assert await live_by_truth(db, tokens) == 0
    alive = {"vaultd-alive"}
    resumed = await asyncio.gather(revoke_jobs.resume_orphaned(db, alive, "vaultd-alive"),
                                   revoke_jobs.resume_orphaned(db, alive, "vaultd-alive"))
    assert sorted(resumed) == [0, 1]
    await revoke_jobs.all_marked()
    assert await _stored_counts(db, account.id, file_id) == (0, 0)
    assert await db.links.count_documents({"fileId": file_id, "revoked": False}) == 0
    assert await db.access_log.count_documents({"fileId": file_id, "action": "revoke"}) == 1
    assert await db.raw(revoke_jobs.JOBS).count_documents({"fileId": file_id}) == 0

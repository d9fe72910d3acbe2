"""`vault-admin accounts list` reads the accounts in bounded `_id` windows and orders them
itself (`accounts.list_accounts`): every account, oldest first (ties of one millisecond by
id), no query walking more than about a window. Against a real SecantusDB with vaultd's
indexes, the queries recorded by the driver and replayed as what the database walks
(`tests.db_reads`)."""

from __future__ import annotations

from datetime import timedelta

from tests import recorded_database
from tests.db_reads import QueryRecorder, examined
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.common import id_ranges
from vaultd.timefmt import utcnow

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures

ACCOUNTS = 3 * id_ranges.BATCH


async def test_every_account_is_listed_oldest_first_reading_a_window_at_a_time(
        db: Db, recorder: QueryRecorder) -> None:
    made = [await accounts.create_account(db, f"Account {n}", "free") for n in range(ACCOUNTS)]
    # Made out of order: the newest account first, and two in one millisecond.
    start = utcnow() - timedelta(days=1)
    for place, account in enumerate(made):
        at = start + timedelta(seconds=ACCOUNTS - place - (place == 1))
        await db.accounts.update_one({"_id": account.id}, {"$set": {"createdAt": at}})
    stored = await db.accounts.find({}, {"createdAt": 1}).to_list()
    expected = [doc["_id"] for doc in sorted(stored, key=lambda d: (d["createdAt"], d["_id"]))]
    with recorder.recorded():
        listed = await accounts.list_accounts(db)
    assert [account.id for account in listed] == expected
    walks = [await examined(db, query) for query in list(recorder.queries)]
    assert max(walks) <= 2 * id_ranges.BATCH, f"one query walked {max(walks)} of {ACCOUNTS}"

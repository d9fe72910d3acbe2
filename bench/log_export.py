"""What `vault-admin log export` costs the database as an account's log grows:
`python -m bench.log_export`.

A fresh embedded SecantusDB with vaultd's indexes gets one account whose access log holds
`--entries` page entries over 30 days, a tenth of them in a burst of one minute, written as an
older vaultd wrote them (unnumbered). The export (`feed.export`, what the command writes) runs
on them as they are (read by time windows), then once the numbering has started and its older
walk has numbered them (`older_log_numbering`: read by their numbers in the account). Beside
each, in the same run, the read the export made before: one `find` of the account's log
sorted by time. Each is timed whole and per database operation (the driver's command
monitoring); prints `bench.expiry_burst`'s table (the answer: the entries written).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.bulk_steps import StepTimes
from bench.expiry_burst import table, timed
from tests.embedded_database import recorded_db, running_database
from vaultd import collector
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.common import feed, log_fence, log_numbering, numbered_log, older_log_numbering
from vaultd.timefmt import utcnow

DAYS = 30
BURST_SHARE = 10  # one entry in ten in the burst


def _log(account_id: str, entries: int) -> list[dict[str, Any]]:
    start, burst = utcnow() - timedelta(days=DAYS + 1), entries // BURST_SHARE
    spread = [start + timedelta(days=DAYS) * (place / (entries - burst))
              for place in range(entries - burst)]
    at_burst = start + timedelta(days=DAYS / 2)
    spread += [at_burst + timedelta(minutes=1) * (place / burst) for place in range(burst)]
    return [{"_id": str(uuid.uuid4()), "accountId": account_id, "fileId": "f" * 36,
             "action": "page", "page": 1 + place % 9, "viewerEmail": "reader@client.example",
             "ip": "203.0.113.7", "at": at} for place, at in enumerate(sorted(spread))]


async def _one_find(db: Db, account_id: str) -> AsyncIterator[Any]:
    """The export's read before: the account's whole log in one `find` sorted by time."""
    async for doc in db.access_log.find({"accountId": account_id}).sort("at", 1):
        yield doc


async def _written(export: AsyncIterator[Any]) -> int:
    return sum([1 async for _ in export])


async def _number_everything(db: Db) -> None:
    horizon = utcnow()
    await log_fence.raise_horizon(db, "access_log", horizon)
    await log_numbering.number_new_entries(db, horizon)
    while not older_log_numbering.done(await db.number_counters.find_one(
            {"_id": numbered_log.HORIZON})):
        await older_log_numbering.number_older_entries(db, 2_000)


async def run(entries: int, storage: Path
              ) -> tuple[list[tuple[str, float, Any]], dict[str, list[float]]]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db:
            account = await accounts.create_account(db, "Log Co", "business")
            log = _log(account.id, entries)
            for first in range(0, len(log), 5_000):
                await db.raw(db.access_log.name).insert_many(log[first:first + 5_000])
            done = []
            for state in ("unnumbered", "numbered"):
                if state == "numbered":
                    await _number_everything(db)
                # The export first: the one long read leaves the server collecting after it.
                done += [await timed(steps, f"{state}: the export, a page at a time",
                                     lambda: _written(feed.export(db, account.id))),
                         await timed(steps, f"{state}: one find, sorted (before)",
                                     lambda: _written(_one_find(db, account.id)))]
            return done, steps.times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    args = parser.parse_args()
    collector.settle()
    with tempfile.TemporaryDirectory() as tmp:
        done, times = asyncio.run(run(args.entries, Path(tmp) / "db"))
    print(f"{args.entries:,} entries over {DAYS} days, one in {BURST_SHARE} in a minute's "
          f"burst\n")
    print(table(times, done))


if __name__ == "__main__":
    main()

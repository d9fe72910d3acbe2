"""What links expiring together cost the account's count when each is on a file of its own:
`python -m bench.expiry_spread`.

`bench.expiry_burst` puts its burst on one file. A mailing of one document to each recipient,
each link made with one `ttlSeconds`, puts one link on each of many files: the account's count
(`services.accounts.link_counts`, as `GET /v1/account` reads it) then reads the links in its
range and the records of their files (their generations: a revoke-all takes a file's links out
of the counts), which a file's own count never needs.

A fresh embedded SecantusDB with vaultd's indexes gets one account and `--files` files of one
link each, made for a day through `services.links.links.create_link`. The account's count is
read (its first sweep, whose look ahead holds every link), read again, then every link is set
to expire at one instant, and the count is read after it and again. Each read is timed per
database operation through the driver's command monitoring; prints the table of
`bench.expiry_burst`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.bulk_steps import StepTimes
from bench.expiry_burst import DAY, file_with_links, table, timed
from tests.embedded_database import recorded_db, running_database
from tests.link_clock import set_expiry
from vaultd import collector
from vaultd.services.accounts import accounts, link_counts, link_shards
from vaultd.timefmt import utcnow


async def run(files: int, storage: Path
              ) -> tuple[dict[str, list[float]], list[tuple[str, float, Any]]]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db:
            account = await accounts.create_account(db, "Mailing Co", "business")
            for _ in range(files):
                await file_with_links(db, account, 1, DAY, link_shards.SHARDS)

            async def count() -> int:
                return await link_counts.account_live(db, account.id)

            done = [await timed(steps, "count after the links were made", count),
                    await timed(steps, "count again", count)]
            at = utcnow() + timedelta(seconds=1)  # after the sweeps above
            await set_expiry(db, {"accountId": account.id}, at)
            await asyncio.sleep((at - utcnow()).total_seconds() + 0.1)
            done += [await timed(steps, "count after the expiry", count),
                     await timed(steps, "count after the expiry, again", count)]
            return steps.times, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3_000)
    args = parser.parse_args()
    collector.settle()
    with tempfile.TemporaryDirectory() as tmp:
        times, done = asyncio.run(run(args.files, Path(tmp) / "db"))
    print(f"{args.files:,} files of one link each, made through the service; "
          f"all expired at one instant\n")
    print(table(times, done))


if __name__ == "__main__":
    main()

"""What a burst of links expiring together costs its file's first reads after:
`python -m bench.expiry_burst`.

A file's active-link count (`services.accounts.link_counts`) reads the links that expired since
its last sweep, and its `?state=expired` page the links listed active whose expiry passed
(`services.links.link_states`), until the background marking lists them expired. Links made
together with one `ttlSeconds` (a mailing to every recipient at once) expire together, so the
first read after holds all of them in one range: the embedded database reads a range whole.
A file with many links reads its ranges per shard (`services.accounts.link_shards`), so that
each read holds a 32nd of the burst; the account's count reads a probe of one shard, then its
range per shard when the probe holds many.

A fresh embedded SecantusDB with vaultd's indexes gets one account and two files, written as an
upload writes them (with shards; `--unsharded`: as uploaded before them, each file's range
read whole; the account's still probed), each with `--links` links made through
`services.links.links.create_link`:
- *the burst*: made for a day; its count is read once (its look ahead: a day before they
  expire), then every link is set to expire a second later, at one instant (a spread of a
  minute costs the same: the range holds them all either way);
- *the reference*, in the same run: made for a week, its count read once, then one link set to
  expire at that instant.

Each read is timed per database operation through the driver's command monitoring: the file's
count (`link_counts.file_live`, as the listing and the file's views read it) after the links
were made; after the expiry, the account's count (`link_counts.account_live`, as `GET
/v1/account` reads it: both files' links), then each file's count twice, then each file's
page 1 of its expired links (`link_states.page_of`, 20) twice (the second before the
background marking has listed them: its writes may be timed with the read beside them).
Prints a Markdown table: operations, the longest one and the total, and what each answered.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.bulk_steps import SLOW_MS, StepTimes
from tests.embedded_database import recorded_db, running_database
from tests.link_clock import set_expiry
from vaultd import collector
from vaultd.db import Db
from vaultd.services.accounts import accounts, link_counts, link_shards
from vaultd.services.common import background
from vaultd.services.links import link_states
from vaultd.services.links.links import LinkRequest, create_link
from vaultd.timefmt import utcnow

DAY = timedelta(days=1)


async def file_with_links(db: Db, account: accounts.Account, links: int, ttl: timedelta,
                           sharded: bool) -> str:
    file_id = str(uuid.uuid4())
    await db.raw(db.files.name).insert_one(
        {"_id": file_id, "accountId": account.id, "name": f"{file_id[:8]}.pdf",
         "kind": "delivery", "contentType": "application/pdf", "size": 1000, "pageCount": 3,
         "createdAt": utcnow() - DAY, "state": "stored",
         "blob": {"name": f"bench-{file_id}", "size": 1000, "key": {}},
         **({link_shards.FLAG: True} if sharded else {})})
    for n in range(links):
        await create_link(db, account, LinkRequest(file_id, f"viewer{n}@client.example",
                                                   "Viewer", int(ttl.total_seconds())))
    return file_id


async def timed(steps: StepTimes, label: str, work: Callable[[], Awaitable[Any]]
                 ) -> tuple[str, float, Any]:
    steps.label = label
    started = time.perf_counter()
    try:
        answer = await work()
    finally:
        steps.label = None
    return label, time.perf_counter() - started, answer


async def _counted(db: Db, steps: StepTimes, label: str, file_id: str
                   ) -> tuple[str, float, Any]:
    async def count() -> int:
        return await link_counts.file_live(db, file_id)

    return await timed(steps, label, count)


async def _counts(db: Db, steps: StepTimes, name: str, file_id: str
                  ) -> list[tuple[str, float, Any]]:
    return [await _counted(db, steps, f"{name}: count after the expiry", file_id),
            await _counted(db, steps, f"{name}: count again", file_id)]


async def _pages(db: Db, steps: StepTimes, name: str, file_id: str
                 ) -> list[tuple[str, float, Any]]:
    """Read after every count: a page starts the marking in the background, whose writes
    would be timed with any read beside them."""
    async def expired_page() -> str:
        file = await db.files.find_one({"_id": file_id})
        assert file is not None
        page, total = await link_states.page_of(db, file, "expired", 1, 20)
        return f"{len(page)} of {total}"

    return [await timed(steps, f"{name}: expired page", expired_page),
            await timed(steps, f"{name}: expired page again", expired_page)]


async def run(links: int, storage: Path, sharded: bool = True
              ) -> tuple[dict[str, list[float]], list[tuple[str, float, Any]]]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db:
            account = await accounts.create_account(db, "Burst Co", "business")
            burst = await file_with_links(db, account, links, DAY, sharded)
            reference = await file_with_links(db, account, links, 7 * DAY, sharded)
            made = [await _counted(db, steps, f"{name}: count after the links were made", file_id)
                    for name, file_id in (("reference", reference), ("burst", burst))]
            # After the sweeps above (an expiry before a sweep is an operator's edit: not
            # counted until the bound passes), and passed before the reads below.
            at = utcnow() + timedelta(seconds=1)
            await set_expiry(db, {"fileId": burst}, at)
            one = await db.links.find_one({"fileId": reference}, {"_id": 1})
            assert one is not None
            await set_expiry(db, {"_id": one["_id"]}, at)
            await asyncio.sleep((at - utcnow()).total_seconds() + 0.1)
            account_count = await timed(steps, "account: count after the expiry",
                                         lambda: link_counts.account_live(db, account.id))
            done = [*made, account_count, *await _counts(db, steps, "reference", reference),
                    *await _counts(db, steps, "burst", burst),
                    *await _pages(db, steps, "reference", reference),
                    *await _pages(db, steps, "burst", burst)]
            await background.settled()  # the pages' marking, before the database stops
            return steps.times, done


def table(times: dict[str, list[float]], done: list[tuple[str, float, Any]]) -> str:
    rows = ["| read | answer | ms in all | operations | longest ms | over 50 ms |",
            "|---|---|---|---|---|---|"]
    for label, seconds, answer in done:
        durations = times.get(label, [])
        rows.append(f"| {label} | {answer} | {seconds * 1000:.1f} | {len(durations)} | "
                    f"{max(durations, default=0.0):.1f} | "
                    f"{sum(1 for d in durations if d > SLOW_MS)} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=5_000)
    parser.add_argument("--unsharded", action="store_true",
                        help="files as uploaded before shards: each range read in one")
    args = parser.parse_args()
    collector.settle()
    with tempfile.TemporaryDirectory() as tmp:
        times, done = asyncio.run(run(args.links, Path(tmp) / "db", not args.unsharded))
    print(f"{args.links:,} links on each file, made through the service; "
          f"the burst's all expired at one instant; "
          f"{'files uploaded before shards' if args.unsharded else 'files with shards'}\n")
    print(table(times, done))


if __name__ == "__main__":
    main()

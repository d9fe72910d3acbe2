"""What a burst of links expiring together costs its file's first reads after:
`python -m bench.expiry_burst`.

A file's active-link count (`services.accounts.link_counts`) reads the links that expired since
its last sweep, and its `?state=expired` page the links listed active whose expiry passed
(`services.links.link_states`), until the background marking lists them expired. Links made
together with one `ttlSeconds` (a mailing to every recipient at once) expire together, so the
first read after holds all of them in one range: the embedded database reads a range whole.
A file with many links reads its ranges per shard (`services.accounts.link_shards`), so that
each read holds a 256th of the burst (a 32nd on a file uploaded while there were 32), after
probes of two shards; the account's count the same.

A fresh embedded SecantusDB with vaultd's indexes gets one account and two files, written as an
upload writes them (256 shards; `--shards 32`: as uploaded while there were 32; `--unsharded`:
as uploaded before shards, each file's range read whole; the account's still probed), each
with `--links` links made through `services.links.links.create_link` (`--bulk`: written as it
writes them, a thousand an insert, with the counters it keeps):
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
Prints a Markdown table: operations, the longest one and the total, and what each answered;
then each operation over 50 ms, named.
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
from vaultd.secrets import digest, new_token
from vaultd.services.accounts import accounts, link_counts, link_shards
from vaultd.services.common import background
from vaultd.services.links import link_states
from vaultd.services.links.links import LinkRequest, create_link
from vaultd.timefmt import utcnow

DAY = timedelta(days=1)
BULK = 1_000  # link records an insert carries (`--bulk`)


async def file_with_links(db: Db, account: accounts.Account, links: int, ttl: timedelta,
                          shards: int | None, bulk: bool = False) -> str:
    """A file of `links` links made for `ttl`, its links among `shards` (None: a file uploaded
    before shards; OLD_SHARDS: one uploaded while there were 32)."""
    file_id = str(uuid.uuid4())
    flag = {} if shards is None else {
        link_shards.FLAG: True if shards == link_shards.OLD_SHARDS else shards}
    await db.raw(db.files.name).insert_one(
        {"_id": file_id, "accountId": account.id, "name": f"{file_id[:8]}.pdf",
         "kind": "delivery", "contentType": "application/pdf", "size": 1000, "pageCount": 3,
         "createdAt": utcnow() - DAY, "state": "stored",
         "blob": {"name": f"bench-{file_id}", "size": 1000, "key": {}}, **flag})
    if bulk:
        await bulk_links(db, account.id, file_id, links, ttl, shards or link_shards.SHARDS)
        return file_id
    for n in range(links):
        await create_link(db, account, LinkRequest(file_id, f"viewer{n}@client.example",
                                                   "Viewer", int(ttl.total_seconds())))
    return file_id


async def bulk_links(db: Db, account_id: str, file_id: str, links: int, ttl: timedelta,
                     shards: int) -> None:
    """`links` link records as `create_link` writes them, a thousand an insert, and the file's
    and the account's counters as its writes leave them (in a tenth of the time: 100,000 links
    through the service take half an hour)."""
    now = utcnow()
    for first in range(1, links + 1, BULK):
        await db.raw(db.links.name).insert_many([
            {"_id": str(uuid.uuid4()), "hash": digest(new_token()), "accountId": account_id,
             "fileId": file_id, "viewerEmail": f"viewer{seq}@client.example",
             "viewerName": "Viewer", "createdAt": now, "expiresAt": now + ttl,
             "revoked": False, "sessionsOpened": 0, "seq": seq,
             "shard": link_shards.shard_of(file_id, seq, shards), "listed": "active"}
            for seq in range(first, min(first + BULK, links + 1))])
    counted = {"$inc": {"linkCount.live": links, "linkCount.moved": links},
               "$min": {"linkCount.nextExpiry": now + ttl}}
    await db.raw(db.files.name).update_one(
        {"_id": file_id}, {**counted, "$set": {"linkSeq": links, "linkTotal": links}})
    await db.raw(db.accounts.name).update_one({"_id": account_id}, counted)


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


async def run(links: int, storage: Path, shards: int | None = link_shards.SHARDS,
              bulk: bool = False, steps: StepTimes | None = None
              ) -> tuple[dict[str, list[float]], list[tuple[str, float, Any]]]:
    steps = steps or StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db:
            account = await accounts.create_account(db, "Burst Co", "business")
            burst = await file_with_links(db, account, links, DAY, shards, bulk)
            reference = await file_with_links(db, account, links, 7 * DAY, shards, bulk)
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
    parser.add_argument("--shards", type=int, default=link_shards.SHARDS,
                        choices=(link_shards.OLD_SHARDS, link_shards.SHARDS),
                        help="the files' shards: 32 as files uploaded while there were 32")
    parser.add_argument("--bulk", action="store_true",
                        help="links written as the service writes them, a thousand at once")
    args = parser.parse_args()
    collector.settle()
    shards = None if args.unsharded else args.shards
    with tempfile.TemporaryDirectory() as tmp:
        steps = StepTimes()
        times, done = asyncio.run(run(args.links, Path(tmp) / "db", shards, args.bulk, steps))
    made = "written as the service writes them" if args.bulk else "made through the service"
    kind = "files uploaded before shards" if shards is None else f"files of {shards} shards"
    print(f"{args.links:,} links on each file, {made}; the burst's all expired at one instant; "
          f"{kind}\n")
    print(table(times, done))
    for label, command, took in steps.slow:
        print(f"- over {SLOW_MS:.0f} ms: {label}: {command}, {took:.1f} ms")


if __name__ == "__main__":
    main()

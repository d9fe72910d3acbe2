"""What the rooms listing costs as an account's rooms grow: `python -m bench.room_listing`.

`GET /v1/rooms` (and the console's Rooms page) lists an account's rooms newest first, paged; a
plan without a room cap lets an account hold any number. A fresh embedded SecantusDB with
vaultd's indexes gets three accounts, their rooms written as `records.create_room` writes them
(numbered, counted on the account):
- *the reference*: 25 rooms, a full page;
- *many*: `--rooms` rooms;
- *pruned*: `--rooms` rooms made, nine in ten then deleted, drawn at random (their numbers gaps).

Each listing (`records.list_rooms`, as both routes call it) is read `--samples` times in turn
with the others, so that all see the same load; each read is timed whole and per database
operation (the driver's command monitoring). Prints a Markdown table: p50 and p95 of a read,
its p95 against the reference's, its operations, the longest one, and the rooms it returned.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from bench.bulk_steps import StepTimes
from tests.embedded_database import recorded_db, running_database
from vaultd import collector
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.rooms import records
from vaultd.timefmt import utcnow

PER_PAGE = 25
DEEP_PAGE = 40
PRUNED_SEED = 46  # the draw of the deleted rooms, fixed before any run
KEPT = 0.1


@dataclass
class Listing:
    label: str
    account_id: str
    page: int
    seconds: list[float] = field(default_factory=list)
    returned: int = 0

    def quantile(self, q: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1000


async def _account(db: Db, name: str, rooms: int, kept: float = 1.0) -> str:
    """An account whose `rooms` rooms were made over a day, each kept with chance `kept`."""
    account = await accounts.create_account(db, name, "business")
    draw, start = random.Random(PRUNED_SEED), utcnow() - timedelta(days=1)
    docs = [{"_id": str(uuid.uuid4()), "accountId": account.id, "name": f"Room {number}",
             "createdAt": start + timedelta(days=1) * (number / rooms), "itemCount": 0,
             "seq": number}
            for number in range(1, rooms + 1) if kept >= 1.0 or draw.random() < kept]
    for first in range(0, len(docs), 1000):
        await db.raw(db.rooms.name).insert_many(docs[first:first + 1000])
    await db.accounts.update_one({"_id": account.id},
                                 {"$set": {"roomCount": len(docs), "roomSeq": rooms}})
    return account.id


async def run(rooms: int, samples: int, storage: Path
              ) -> tuple[list[Listing], dict[str, list[float]]]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db:
            reference = await _account(db, "Reference Co", PER_PAGE)
            many = await _account(db, "Many Rooms Co", rooms)
            pruned = await _account(db, "Pruned Co", rooms, KEPT)
            listings = [Listing(f"reference: {PER_PAGE} rooms, page 1", reference, 1),
                        Listing(f"{rooms:,} rooms, page 1", many, 1),
                        Listing(f"{rooms:,} rooms, nine in ten deleted, page 1", pruned, 1),
                        Listing(f"{rooms:,} rooms, page {DEEP_PAGE} (reads its depth)", many,
                                DEEP_PAGE)]
            for _ in range(samples):
                for listing in listings:
                    steps.label = listing.label
                    started = time.perf_counter()
                    answer = await records.list_rooms(db, listing.account_id, listing.page,
                                                      PER_PAGE)
                    listing.seconds.append(time.perf_counter() - started)
                    steps.label = None
                    listing.returned = len(answer["rooms"])
            return listings, steps.times


def table(listings: list[Listing], times: dict[str, list[float]], samples: int) -> str:
    rows = ["| listing | p50 ms | p95 ms | p95 x the reference's | operations a read | "
            "longest operation ms | rooms returned |", "|---|---|---|---|---|---|---|"]
    reference = listings[0].quantile(0.95)
    for listing in listings:
        durations = times.get(listing.label, [])
        rows.append(f"| {listing.label} | {listing.quantile(0.5):.1f} | "
                    f"{listing.quantile(0.95):.1f} | {listing.quantile(0.95) / reference:.2f} | "
                    f"{len(durations) / samples:.1f} | {max(durations, default=0.0):.1f} | "
                    f"{listing.returned} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=60)
    args = parser.parse_args()
    collector.settle()
    with tempfile.TemporaryDirectory() as tmp:
        listings, times = asyncio.run(run(args.rooms, args.samples, Path(tmp) / "db"))
    print(f"{args.rooms:,} rooms an account, {PER_PAGE} a page, {args.samples} reads each\n")
    print(table(listings, times, args.samples))


if __name__ == "__main__":
    main()

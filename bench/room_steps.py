"""What a room's revoke-all and a room's deletion cost the embedded database, per operation.

`python -m bench.room_steps --links 5000` seeds a fresh embedded SecantusDB with one account and
two rooms of `--links` live room links each (the second also holds `--items` folders), then
times, through the driver's command monitoring as `bench.bulk_steps` does (queueing behind the
database's one lock included):

- `room revoke-all (the call)`: `rooms.room_links.revoke_all` (one write, whatever the links),
  then `room marking`: its background steps marking the link records (`links.revoke_jobs`, kind
  `room`);
- `room delete (the call)`: `rooms.room_deletions.delete_room` of the second room (the claim and
  the settling), then `room clean-up`: its background steps deleting the links and the items in
  `_id` windows, each delete followed by a rest as long as it took.

Prints the Markdown table of `bench.bulk_steps`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from bench.bulk_steps import StepTimes, Work, _timed, table
from tests.embedded_database import recorded_db, running_database
from tests.room_link_seed import seed_room_items, seed_room_links
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.common import background
from vaultd.services.rooms import records, room_deletions, room_links


async def _settled(records_done: int) -> int:
    await background.settled()
    return records_done


async def _deleted(db: Db, account_id: str, room_id: str, records_done: int) -> int:
    await room_deletions.delete_room(db, account_id, room_id, "bench")
    return records_done


async def run(links: int, items: int, storage: Path) -> tuple[dict[str, list[float]],
                                                             dict[str, Work]]:
    steps = StepTimes()
    with running_database(storage) as server:
        async with recorded_db(server, steps) as db:
            account = await accounts.create_account(db, "Rooms Co", "business")
            revoked = await records.create_room(db, account, "Revoked")
            doomed = await records.create_room(db, account, "Deleted")
            for room in (revoked, doomed):
                await seed_room_links(db, account.id, room["_id"], links)
            await seed_room_items(db, account.id, doomed["_id"], items)
            room = await records.get_room(db, account.id, revoked["_id"])
            took: dict[str, Work] = {}
            took["room revoke-all (the call)"] = await _timed(
                steps, "room revoke-all (the call)",
                lambda: room_links.revoke_all(db, room, "bench"))
            took["room marking"] = await _timed(steps, "room marking", lambda: _settled(links))
            took["room delete (the call)"] = await _timed(
                steps, "room delete (the call)",
                lambda: _deleted(db, account.id, doomed["_id"], links + items))
            took["room clean-up"] = await _timed(steps, "room clean-up",
                                                 lambda: _settled(links + items))
            return steps.times, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=5_000)
    parser.add_argument("--items", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rooms-") as work:
        times, took = asyncio.run(run(args.links, args.items, Path(work) / "db"))
    print(table(times, took))


if __name__ == "__main__":
    main()

"""Links written before they were listed by state (`link_states`) are listed once at start-up,
and their files given the counts the by-state listing reads.

One walk of the links in bounded `_id` windows (`services.common.id_ranges`): each link without
`listed` gets its record's state (`link_states.listed_as`), NUMBERING_BATCH links per update;
each file's links are tallied by generation. Then each file not yet noted by a revoke-all
since (`linkRevokedTo` absent) is: the last number of its older generations' links (revoked by
its last revoke-all; numbers follow generations, as the numbering at start-up followed the
links' creation), their count, and the links of its current generation revoked one by one. A
spent link still counted live leaves the live counts, as `link_states.spent` does it now. A
marker in `migrations` keeps later start-ups from looking again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from vaultd.db import Db
from vaultd.services.accounts import link_counts, link_generations
from vaultd.services.accounts.link_generations import is_generation
from vaultd.services.common import id_ranges
from vaultd.services.links import link_states

LINK_STATES_MIGRATION = "linkListed"
NUMBERING_BATCH = 20  # updates of a few links each: a link carries several indexes
_FIELDS = {"fileId": 1, "seq": 1, "revoked": 1, "expiresAt": 1, "exhausted": 1, "generation": 1,
           "listed": 1, "countedOut": 1, "accountId": 1}


@dataclass
class _Tally:
    """One file's links by generation: (highest number, records, revoked by themselves)."""

    generations: dict[int, list[int]] = field(default_factory=dict)

    def add(self, link: dict[str, Any]) -> None:
        counts = self.generations.setdefault(link_generations.generation(link, "generation"),
                                             [int(link.get("seq", 0)), 0, 0])
        counts[0] = max(counts[0], int(link.get("seq", 0)))
        counts[1] += 1
        counts[2] += link.get("revoked") is not False


async def link_listed_once(db: Db) -> None:
    marks = db.raw("migrations")
    if await marks.find_one({"_id": LINK_STATES_MIGRATION}) is not None:
        return
    tallies: dict[str, _Tally] = {}
    now = datetime.now(UTC)
    async for batch in id_ranges.batches(db.raw(db.links.name), _FIELDS):
        for link in batch:
            tallies.setdefault(link["fileId"], _Tally()).add(link)
        await _list(db, [link for link in batch if "listed" not in link], now)
        for link in batch:
            if _spent_live(link, now):
                await _count_out(db, link)
    for file_id, tally in sorted(tallies.items()):
        await _note_file(db, file_id, tally)
    await marks.update_one({"_id": LINK_STATES_MIGRATION}, {"$set": {"at": now}}, upsert=True)


def _spent_live(link: dict[str, Any], now: datetime) -> bool:
    return bool(link.get("exhausted") and link.get("revoked") is False
                and not link.get("countedOut") and link["expiresAt"] > now)


async def _count_out(db: Db, link: dict[str, Any]) -> None:
    """A spent link still counted live leaves the live counts (once: `countedOut`)."""
    result = await db.links.update_one({"_id": link["_id"], "revoked": False,
                                        "countedOut": {"$ne": True}},
                                       {"$set": {"countedOut": True}})
    if result.modified_count:
        await link_counts.revoked_in_generation(db, link, 1)


async def _list(db: Db, links: list[dict[str, Any]], now: datetime) -> None:
    for value, ids in link_states.ids_by_value(links, now).items():
        for first in range(0, len(ids), NUMBERING_BATCH):
            await db.links.update_many({"_id": {"$in": ids[first:first + NUMBERING_BATCH]}},
                                       {"$set": {"listed": value}})


async def _note_file(db: Db, file_id: str, tally: _Tally) -> None:
    file = await db.files.find_one({"_id": file_id}, {"linkGeneration": 1, "linkRevokedTo": 1})
    if file is None or "linkRevokedTo" in file:
        return
    current = link_generations.generation(file)
    older = [counts for generation, counts in tally.generations.items()
             if generation < current]
    since = sum(counts[2] for generation, counts in tally.generations.items()
                if generation >= current)
    noted: dict[str, int] = {"linkRevokedSince": since}
    if older:
        noted |= {"linkRevokedTo": max(counts[0] for counts in older),
                  "linkRevokedCount": sum(counts[1] for counts in older)}
    await db.files.update_one({"_id": file_id, "linkGeneration": is_generation(current),
                               "linkRevokedTo": {"$exists": False}}, {"$set": noted})


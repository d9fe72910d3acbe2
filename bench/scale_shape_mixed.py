"""The `mixed` shape of `bench.scale_shapes`: a year of one account's traffic drawn at random
from a seed, by a process none of vaultd's reads was tuned on.

The four named shapes (`bench.scale_shape_seeds`) each push one pattern to its end, and were
written beside the reads they measure. Here every parameter is drawn from the seed, and the
seeds measured were chosen before any run of this shape (docs/performance-records.md):

- **When**: a few to a few dozen active spells over the year, each placed at random, as long
  as a log-normal draw makes it (a few minutes to several days) and as busy as a Pareto weight
  makes it; every record falls in one of them, uniformly within it. Between them, quiet.
- **What**: each record is an upload (a new file), a page view, a link's creation or a
  file's deletion, at shares drawn from a Dirichlet. A view or a link goes to a file by Zipf
  popularity (exponent 0.8-1.6) among those uploaded and not deleted by then, the bench's
  busy file ranked first, then the newest; a view of the busy file comes through its room at
  a drawn share. A link lives a log-normal number of days (a median of 2 to 60). A deletion
  takes a file at random (never the busy one, whose routes are timed) with its links, as a
  finished deletion leaves it (`scale_shape_seeds._deleted`: no record, a `delete` entry, a
  `file.deleted` delivery when it is recent).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from vaultd.timefmt import utcnow

YEAR = timedelta(days=365)
KINDS = ("upload", "page", "link", "delete")
RECENT = timedelta(days=25)  # deliveries older than this are past webhooks.keep_days: none


@dataclass(frozen=True)
class Plan:
    """The shape's parameters, every one drawn from the seed (printed with the table)."""

    seed: int
    spells: int
    shares: dict[str, float]
    zipf: float
    room_share: float
    link_median_days: float

    def __str__(self) -> str:
        shares = ", ".join(f"{kind} {share:.0%}" for kind, share in self.shares.items())
        return (f"drawn from seed {self.seed}: {self.spells} spells; {shares}; Zipf "
                f"{self.zipf:.2f}; room {self.room_share:.0%}; links' median life "
                f"{self.link_median_days:.0f} days")


@dataclass
class Drawn:
    """What the draw made, as records the seeding writes (`scale_shape_seeds._mixed`)."""

    files: list[dict[str, Any]]  # kept, then written with their uploads
    deleted: list[tuple[dict[str, Any], datetime]]  # each with its deletion's time
    links: dict[str, list[dict[str, Any]]]  # by file: the kept files' links
    views: list[tuple[str, datetime, bool]]  # (file, time, through the room)
    top: int  # the account's last file number
    links_deleted: int = 0  # drawn, then gone with their file


def plan(rng: random.Random, seed: int) -> Plan:
    weights = [rng.gammavariate(alpha, 1.0) for alpha in (1.0, 6.0, 2.0, 0.7)]
    total = sum(weights)
    return Plan(seed=seed, spells=rng.randint(4, 40),
                shares={kind: weight / total for kind, weight in zip(KINDS, weights,
                                                                      strict=True)},
                zipf=rng.uniform(0.8, 1.6), room_share=rng.uniform(0.05, 0.5),
                link_median_days=math.exp(rng.uniform(math.log(2), math.log(60))))


def times(rng: random.Random, spells: int, count: int, end: datetime) -> list[datetime]:
    """`count` times in `spells` spells of the year before `end`, oldest first."""
    placed = []
    for _ in range(spells):
        length = timedelta(minutes=min(rng.lognormvariate(math.log(180), 2.0), 14 * 24 * 60))
        start = end - YEAR + (YEAR - length) * rng.random()
        placed.append((start, length, rng.paretovariate(1.2)))
    weights = [weight for _, _, weight in placed]
    drawn = []
    for start, length, _ in rng.choices(placed, weights=weights, k=count):
        drawn.append(start + length * rng.random())
    return sorted(drawn)


def draw(seed: int, size: int, busy: dict[str, Any], top: int,
         new_file: Any, new_link: Any) -> tuple[Plan, Drawn]:
    """`size` records after `top` files, drawn from `seed`: `new_file(at, seq)` and
    `new_link(file_id, at, seq, life)` make them as the seeding writes them; the busy file's
    links continue its numbers."""
    rng = random.Random(seed)
    shape = plan(rng, seed)
    end = utcnow() - timedelta(hours=2)  # older than the numbering horizon (`begin_shape`)
    live: list[dict[str, Any]] = [busy]
    deleted: list[tuple[dict[str, Any], datetime]] = []
    links: dict[str, list[dict[str, Any]]] = {busy["_id"]: []}
    numbers = {busy["_id"]: int(busy.get("linkSeq", 0))}
    views: list[tuple[str, datetime, bool]] = []
    links_deleted = 0
    kinds, shares = list(shape.shares), list(shape.shares.values())
    for at in times(rng, shape.spells, size, end):
        kind = rng.choices(kinds, weights=shares)[0]
        if kind == "upload" or (kind == "delete" and len(live) < 2):
            top += 1
            doc = new_file(at, top)
            live.append(doc)
            links[doc["_id"]], numbers[doc["_id"]] = [], 0
        elif kind == "delete":
            gone = live.pop(rng.randrange(1, len(live)))  # never the busy file, first
            deleted.append((gone, at))
            links_deleted += len(links.pop(gone["_id"]))
        else:
            rank = _zipf_rank(rng, len(live), shape.zipf)  # the newest files after the busy one
            target = live[-rank if rank else 0]["_id"]
            if kind == "page":
                views.append((target, at, target == busy["_id"]
                              and rng.random() < shape.room_share))
            else:
                numbers[target] += 1
                life = timedelta(days=rng.lognormvariate(math.log(shape.link_median_days), 1.0))
                links[target].append(new_link(target, at, numbers[target], life))
    kept = [doc for doc in live if doc is not busy]
    return shape, Drawn(kept, deleted, links, views, top, links_deleted)


def _zipf_rank(rng: random.Random, count: int, exponent: float) -> int:
    """A rank in [0, count) with weight 1 / (rank + 1) ** exponent, by inverting the
    continuous approximation of its cumulative weight (no table of `count` weights)."""
    if exponent == 1.0:
        exponent += 1e-9
    power = 1.0 - exponent
    total = ((count + 1) ** power - 1) / power
    rank = (1 + rng.random() * total * power) ** (1 / power) - 1
    return min(int(rank), count - 1)


def recent(at: datetime) -> bool:
    return utcnow() - at < RECENT

"""A placement trace in an account with a year of page views (docs/leak-tracing.md, "A year of
views": the target is 10^6 views, any view of the year named within 2 s of worker time, a
miss 0.5 s p95).

    python -m bench.leakmark_year [--views 1000000] [--hot 20000] [--pages 6] [--leaks 2]
                                  [--misses 1] [--seed 50] [--work DIR]

An embedded SecantusDB of its own with vaultd's indexes, one account seeded directly: `--pages`
pages of the bench corpus (each page 1 of a file of its own) viewed `--hot` times each over the
last 365 days, the rest of `--views` spread over 2,000 other files of 10 pages each; every page
has its print (the corpus pages' made from them as served; the others' random bits, as
unrelated pages' are). Then, for each corpus page, `--leaks` views drawn from any day of the
year, each served with its view's placement field, washed of its invisible mark without the key
(`bench.leakmark_wash`, "observed chips, no key") and traced through the service
(`services.tracing.placement.placement_match`) with its tasks run in this process: the CPU time
they take is what a worker spends. Misses (`--misses` of each): each corpus page served to nobody
of the account (its print matches, no view does: every view of its year is scored) and pages
of documents the account never had (no print matches: the account's newest views only); each
miss's line splits the worker's time into the reading and the scoring.

Seeding is the slow part (2-4 ms a view on a loaded machine: an hour or more at 10^6); the
database directory is kept (`--work`, in the system's temporary directory unless said), and a
seeding cut short goes on where it stopped when the same command runs again.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image

from bench.console import with_long_socket_timeout
from bench.leakmark_attacks import SERVED_QUALITY, Page, corpus_pages, jpeg, marked
from bench.leakmark_wash import WASHES
from render.forensic.layout import keyed
from render.forensic.placement_page import page_print
from render.forensic_wire.page_print import bands
from render.worker.entry_points import score_placement
from tests.embedded_database import running_database
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing.placement import placement_match
from vaultd.timefmt import utcnow

ACCOUNT = "acct-year"
OTHER_FILES, OTHER_PAGES = 2000, 10
INSERT_CHUNK = 1000
WASH = "observed chips, no key"


class InProcessPool:
    """The render pool's `submit`, run here: each task's CPU time is added up (a worker's),
    the reading's apart, and the candidates scored are counted."""

    def __init__(self) -> None:
        self.cpu = self.reading = 0.0
        self.scored = 0

    def submit(self, fn: Callable[..., Any], *args: Any, **_: Any) -> asyncio.Future[Any]:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        start = time.process_time()
        try:
            done.set_result(fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed to the caller as a worker's would be
            done.set_exception(exc)
        spent = time.process_time() - start
        self.cpu += spent
        if fn is score_placement:
            self.scored += len(args[1])
        else:
            self.reading += spent
        return done


@dataclass
class Seeded:
    views: dict[str, list[tuple[int, float]]]  # corpus file id -> (render id, days ago)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


async def seed(db: Db, pages: list[Page], mark: MarkCipher, views: int, hot: int,
               rng: random.Random, now: datetime) -> Seeded:
    """The account's prints and views, drawn from `rng` in a fixed order, times before `now`.
    Resumable: what the database already holds of this drawing (counted) is not written again,
    so a seeding cut short goes on where it stopped."""
    used: set[int] = set()
    seeded = Seeded({f"doc-{k}": [] for k in range(len(pages))})
    had_prints = await db.page_prints.estimated_document_count()
    had_views = await db.access_log.estimated_document_count()

    def render_id() -> int:
        while (value := rng.getrandbits(45)) in used:
            pass
        used.add(value)
        return value

    prints: list[dict[str, Any]] = []
    for k, page in enumerate(pages):
        made = page_print(jpeg(marked(page, 1, mark.layout_key, b"print seed 00000"),
                               SERVED_QUALITY), mark.page_print_key)
        assert made is not None, page.name
        prints.append({"_id": f"doc-{k}:1", "accountId": ACCOUNT, "fileId": f"doc-{k}",
                       "page": 1, "bits": made.hex(), "bands": bands(made), "at": now})
    for f in range(OTHER_FILES):
        for p in range(1, OTHER_PAGES + 1):
            bits = rng.getrandbits(256).to_bytes(32, "big")
            prints.append({"_id": f"file-{f}:{p}", "accountId": ACCOUNT, "fileId": f"file-{f}",
                           "page": p, "bits": bits.hex(), "bands": bands(bits), "at": now})
    for first in range(had_prints, len(prints), INSERT_CHUNK):
        await db.raw("page_prints").insert_many(prints[first: first + INSERT_CHUNK])
    batch: list[dict[str, Any]] = []
    for number in range(views):
        if number < hot * len(pages):
            file_id, page_number = f"doc-{number % len(pages)}", 1
        else:
            file_id, page_number = f"file-{rng.randrange(OTHER_FILES)}", rng.randrange(1, 11)
        days = rng.uniform(0, 364.9)
        value = render_id()
        if file_id in seeded.views:
            seeded.views[file_id].append((value, days))
        if number < had_views:
            continue
        batch.append({"_id": f"view-{number:08d}", "accountId": ACCOUNT, "fileId": file_id,
                      "action": "page", "page": page_number, "at": now - timedelta(days=days),
                      "viewerEmail": f"viewer{number % 997}@example.com", "ip": "198.51.100.7",
                      "renderId": f"{value:012x}", "viewerName": "Viewer"})
        if len(batch) == INSERT_CHUNK or number == views - 1:
            await db.raw("access_log").insert_many(batch)
            batch = []
            if number % 50_000 < INSERT_CHUNK:
                print(f"  seeded {number + 1} views", flush=True)
    return seeded


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def trace(db: Db, mark: MarkCipher, leak: bytes) -> tuple[int | None, float, float, str]:
    """(the view named, the worker's CPU seconds, the wall seconds of the whole trace, where
    the worker's time went)."""
    pool = InProcessPool()
    start = time.perf_counter()
    found = await placement_match(db, pool, mark, ACCOUNT, leak,  # type: ignore[arg-type]
                                  1600)
    spent = (f"reading {pool.reading:.2f} s, {pool.scored} views scored in "
             f"{pool.cpu - pool.reading:.2f} s")
    return found, pool.cpu, time.perf_counter() - start, spent


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    mark = MarkCipher.from_key(rng.randbytes(32))
    pages = corpus_pages(args.pages)
    strangers = corpus_pages(args.pages + 4)[args.pages:]  # pages the account never had
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    with running_database(work / "db") as server:
        db = connect(with_long_socket_timeout(server.uri), "vaultd")
        await ensure_indexes(db)
        recipe = {"views": args.views, "hot": args.hot, "pages": args.pages, "seed": args.seed}
        kept = work / "seeding.json"
        if kept.exists():
            seeding = json.loads(kept.read_text())
            if seeding["recipe"] != recipe:
                raise SystemExit(f"{work} holds another seeding ({seeding['recipe']})")
            now = datetime.fromisoformat(seeding["now"])
        else:
            now = utcnow()
            kept.write_text(json.dumps({"recipe": recipe, "now": now.isoformat()}))
        started = time.perf_counter()
        seeded = await seed(db, pages, mark, args.views, args.hot, rng, now)
        print(f"seeded in {time.perf_counter() - started:.0f} s", flush=True)
        await placement_match(db, InProcessPool(), mark, ACCOUNT,  # type: ignore[arg-type]
                              _png(jpeg(pages[0].image, SERVED_QUALITY)), 1600)  # warm-up
        named, wrong, costs, walls = 0, 0, [], []
        for k, page in enumerate(pages):
            for _ in range(args.leaks):
                value, days = rng.choice(seeded.views[f"doc-{k}"])
                served = jpeg(marked(page, rng.getrandbits(45), mark.layout_key,
                                     mark.placement_seed(value)), SERVED_QUALITY)
                washed = WASHES[WASH](served, page.page_height, keyed(None))
                found, cpu, wall, _ = await trace(db, mark, _png(washed))
                named += found == value
                wrong += found is not None and found != value
                costs.append(cpu)
                walls.append(wall)
                print(f"  {page.name}, a view {days:.0f} days old: "
                      f"{'named' if found == value else 'WRONG' if found else 'missed'}, "
                      f"worker {cpu:.2f} s, trace {wall:.2f} s", flush=True)
        misses: dict[str, list[tuple[float, float, bool]]] = {"own page, no view": [],
                                                               "another document": []}
        for kind, sources in (("own page, no view", pages), ("another document", strangers)):
            for page in sources:
                for _ in range(args.misses):
                    unserved = WASHES[WASH](jpeg(marked(page, 5, mark.layout_key,
                                                        rng.randbytes(16)), SERVED_QUALITY),
                                            page.page_height, keyed(None))
                    found, cpu, wall, spent = await trace(db, mark, _png(unserved))
                    misses[kind].append((cpu, wall, found is not None))
                    print(f"  a miss ({kind}), {page.name}: worker {cpu:.2f} s ({spent}), "
                          f"trace {wall:.2f} s", flush=True)
        await db.close()
    print(f"\n{args.views} views, {args.hot} of each of {len(pages)} pages; "
          f"traces: {named}/{len(costs)} named, {wrong} wrong; worker p50 "
          f"{statistics.median(costs):.2f} s, max {max(costs):.2f} s; whole trace p50 "
          f"{statistics.median(walls):.2f} s, max {max(walls):.2f} s")
    for kind, results in misses.items():
        cpus = [cpu for cpu, _, _ in results]
        print(f"misses ({kind}): {len(results)}, named {sum(n for _, _, n in results)}; worker "
              f"p50 {statistics.median(cpus):.2f} s, p95 {_quantile(cpus, 0.95):.2f} s; whole "
              f"trace max {max(wall for _, wall, _ in results):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--views", type=int, default=1_000_000)
    parser.add_argument("--hot", type=int, default=20_000, help="views of each corpus page")
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--leaks", type=int, default=2, help="per corpus page")
    parser.add_argument("--misses", type=int, default=1,
                        help="leaks of no view, per corpus page and per page never served")
    parser.add_argument("--seed", type=int, default=50)
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "vaultd-leakmark-year"),
                        help="the seeded database's directory, kept for the next run")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

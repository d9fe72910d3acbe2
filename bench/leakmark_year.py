"""A placement trace in an account with a year of page views (docs/leak-tracing.md, "A year of
views": the target is 10^6 views, any view of the year named within 2 s of worker time, a
miss 0.5 s p95).

    python -m bench.leakmark_year [--views 1000000] [--pages 6] [--ages 365,182,0]
                                  [--misses 1] [--seed 50] [--work DIR]

An embedded SecantusDB of its own with vaultd's indexes, one account seeded directly: 2,000
files of 10 pages and `--pages` pages of the bench corpus (each page 1 of a file of its own),
every view's page drawn by Zipf's law (the page of rank r takes 1/r of the views) with the
corpus pages at ranks 1, 2, 10, 100, 1,000 and 10,000 (at 10^6 views about 95,000, 48,000,
9,500, 950, 95 and 10 views), the others' ranks at random; a view's time any moment of the
last 365 days (fewer at night and at weekends), or, for 30 % of them, in one of its page's
0-3 bursts (a few hours). Every page has its print (the corpus pages' made from them as served;
the others' random bits, as unrelated pages' are). Then, for each corpus page, its views
nearest `--ages` days ago, each served with its view's placement field and its pattern
printing its time, washed of its invisible mark without the key (`bench.leakmark_wash`,
"observed chips, no key") and traced through the service
(`services.tracing.placement.placement_match`) with its tasks run in this process: the CPU time
they take is what a worker spends. Misses (`--misses` of each): each corpus page served to
nobody of the account on a day of the year (its print matches, no view does) and pages of
documents the account never had (no print matches: the account's newest views only); each
line splits the worker's time into the reading and the scoring.

Seeding loads the log with its indexes dropped and built after (`bench.scale_shape_loading.
Loader`); the database directory is kept (`--work`, in the system's temporary directory unless
said) and a complete seeding is used again by the same command; one cut short is started over.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import io
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image

from bench.console import with_long_socket_timeout
from bench.leakmark_attacks import MARK, SERVED_QUALITY, Page, corpus_pages, jpeg, marked
from bench.leakmark_wash import WASHES
from bench.scale_shape_loading import Loader
from render.forensic.layout import keyed
from render.forensic.placement_page import page_print
from render.forensic_wire.page_print import bands
from render.watermark import pattern, viewer_mark
from render.worker.entry_points import score_placement
from tests.embedded_database import running_database
from vaultd.db import Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing.placement import placement_match
from vaultd.timefmt import paris_display, utcnow

ACCOUNT = "acct-year"
OTHER_FILES, OTHER_PAGES = 2000, 10
# Ranks of the corpus pages among the account's pages by views: its hottest and second, then
# quieter ones (under Zipf's law at 10^6 views, about 95,000, 48,000, 9,500, 950, 95, 10).
CORPUS_RANKS = (1, 2, 10, 100, 1000, 10_000)
ZIPF = 1.0
BURSTY, BURST_DAYS = 0.3, 0.1  # a share of a page's views in its bursts, which last hours
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
    counts: dict[str, int]  # corpus file id -> its page's views in the year


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _popularity(pages: int, others: int, rng: random.Random) -> tuple[list[str], list[float]]:
    """Every page of the account ("file:page") and its share of the views: Zipf's law (the
    page of rank r takes 1 / r^ZIPF), ranks drawn at random but for the corpus pages, which sit
    at CORPUS_RANKS (the account's hottest page, its second, then quieter ones)."""
    names = [f"file-{f}:{p}" for f in range(others) for p in range(1, OTHER_PAGES + 1)]
    rng.shuffle(names)
    for k in range(pages):
        rank = CORPUS_RANKS[k] if k < len(CORPUS_RANKS) else 10 * k
        names.insert(rank - 1, f"doc-{k}:1")
    return names, [1.0 / (rank ** ZIPF) for rank in range(1, len(names) + 1)]


def _days_ago(rng: random.Random, bursts: list[float]) -> float:
    """When a view was made: a share BURSTY in one of its page's bursts (a link shared, a
    meeting: a few hours of views), the rest any moment of the year, fewer at night and at
    weekends."""
    if bursts and rng.random() < BURSTY:
        return min(364.99, max(0.0, rng.choice(bursts) + rng.expovariate(1 / BURST_DAYS)))
    while True:
        days = rng.uniform(0, 364.99)
        hour, weekday = (days * 24) % 24, int(days) % 7
        if rng.random() < (0.15 if hour < 7 or hour >= 20 else 1.0) * (
                0.3 if weekday >= 5 else 1.0):
            return days


def drawn_views(pages: int, views: int, rng: random.Random
                ) -> Iterator[tuple[str, int, float]]:
    """(file id, page, days ago) of each view, in a fixed order from `rng`."""
    names, weights = _popularity(pages, OTHER_FILES, rng)
    chosen = rng.choices(range(len(names)), weights=weights, k=views)
    bursts: dict[int, list[float]] = {}
    for index in chosen:
        if index not in bursts:
            bursts[index] = [rng.uniform(0, 364.9) for _ in range(rng.randrange(0, 4))]
        file_id, page = names[index].split(":")
        yield file_id, int(page), _days_ago(rng, bursts[index])


async def seed(db: Db, pages: list[Page], mark: MarkCipher, views: int,
               rng: random.Random, now: datetime, *, write: bool) -> Seeded:
    """The account's prints and views, drawn from `rng` in a fixed order, times before `now`;
    written when `write` (the access log with its indexes dropped, then built again,
    `bench.scale_shape_loading.Loader`: about half the time of an insert that keeps them)."""
    used: set[int] = set()
    seeded = Seeded({f"doc-{k}": [] for k in range(len(pages))},
                    {f"doc-{k}": 0 for k in range(len(pages))})

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
    def entries() -> Iterator[dict[str, Any]]:
        for number, (file_id, page, days) in enumerate(drawn_views(len(pages), views, rng)):
            value = render_id()
            if file_id in seeded.views:
                seeded.views[file_id].append((value, days))
                seeded.counts[file_id] += 1
            yield {"_id": f"view-{number:08d}", "accountId": ACCOUNT, "fileId": file_id,
                   "action": "page", "page": page, "at": now - timedelta(days=days),
                   "viewerEmail": f"viewer{number % 997}@example.com", "ip": "198.51.100.7",
                   "renderId": f"{value:012x}", "viewerName": "Viewer"}
            if (number + 1) % 100_000 == 0:
                print(f"  drawn {number + 1} views", flush=True)

    if not write:
        for _ in entries():
            pass
        return seeded
    loader = Loader(bulk=True)
    await loader.insert(db, "page_prints", prints, bulk_from=1)
    await loader.insert(db, "access_log", entries(), bulk_from=1)
    return seeded


def dated(page: Page, at: datetime) -> Page:
    """The page as served at `at`: its pattern prints that time (Paris, as vaultd's default)."""
    spec = dataclasses.replace(MARK, displayed_at=paris_display(at))
    tile = pattern.make_tile(viewer_mark.tile_lines(spec), pattern.font_size(page.image.width))
    return dataclasses.replace(page, overlay=dataclasses.replace(page.overlay, tile=tile))


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


def _recipe(args: argparse.Namespace) -> dict[str, Any]:
    return {"views": args.views, "pages": args.pages, "seed": args.seed, "draw": "zipf-bursts"}


def _seeding(work: Path, recipe: dict[str, Any]) -> tuple[datetime, bool]:
    """The seeding's `now` and whether it is complete; a seeding cut short is wiped (the log is
    loaded in one go, indexes dropped, so it cannot go on where it stopped)."""
    kept = work / "seeding.json"
    if kept.exists():
        seeding = json.loads(kept.read_text())
        if seeding["recipe"] != recipe:
            raise SystemExit(f"{work} holds another seeding ({seeding['recipe']})")
        if seeding.get("complete"):
            return datetime.fromisoformat(seeding["now"]), True
    shutil.rmtree(work / "db", ignore_errors=True)
    now = utcnow()
    kept.write_text(json.dumps({"recipe": recipe, "now": now.isoformat()}))
    return now, False


def _leaked_views(views: list[tuple[int, float]], ages: list[float]) -> list[tuple[int, float]]:
    """The page's views nearest each of `ages` (days ago), once each."""
    chosen: list[tuple[int, float]] = []
    for age in ages if views else []:
        view = min(views, key=lambda view: abs(view[1] - age))
        if view not in chosen:
            chosen.append(view)
    return chosen


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    mark = MarkCipher.from_key(rng.randbytes(32))
    pages = corpus_pages(args.pages)
    strangers = corpus_pages(args.pages + 4)[args.pages:]  # pages the account never had
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    now, complete = _seeding(work, _recipe(args))
    with running_database(work / "db") as server:
        db = connect(with_long_socket_timeout(server.uri), "vaultd")
        await ensure_indexes(db)
        started = time.perf_counter()
        seeded = await seed(db, pages, mark, args.views, rng, now, write=not complete)
        print(f"seeded in {time.perf_counter() - started:.0f} s", flush=True)
        (work / "seeding.json").write_text(json.dumps(
            {"recipe": _recipe(args), "now": now.isoformat(), "complete": True}))
        await placement_match(db, InProcessPool(), mark, ACCOUNT,  # type: ignore[arg-type]
                              _png(jpeg(pages[0].image, SERVED_QUALITY)), 1600)  # warm-up
        named, wrong, costs, walls = 0, 0, [], []
        ages = [float(age) for age in args.ages.split(",")]
        for k, page in enumerate(pages):
            print(f"{page.name} (doc-{k}): {seeded.counts[f'doc-{k}']} views in the year",
                  flush=True)
            for value, days in _leaked_views(seeded.views[f"doc-{k}"], ages):
                served = jpeg(marked(dated(page, now - timedelta(days=days)),
                                     rng.getrandbits(45), mark.layout_key,
                                     mark.placement_seed(value)), SERVED_QUALITY)
                washed = WASHES[WASH](served, page.page_height, keyed(None))
                found, cpu, wall, spent = await trace(db, mark, _png(washed))
                named += found == value
                wrong += found is not None and found != value
                costs.append(cpu)
                walls.append(wall)
                print(f"  a view {days:.1f} days old: "
                      f"{'named' if found == value else 'WRONG' if found else 'MISSED'}, "
                      f"worker {cpu:.2f} s ({spent}), trace {wall:.2f} s", flush=True)
        misses: dict[str, list[tuple[float, float, bool]]] = {"own page, no view": [],
                                                               "another document": []}
        for kind, sources in (("own page, no view", pages), ("another document", strangers)):
            for page in sources:
                for _ in range(args.misses):
                    when = now - timedelta(days=rng.uniform(0, 364.9))
                    unserved = WASHES[WASH](jpeg(marked(dated(page, when), 5, mark.layout_key,
                                                        rng.randbytes(16)), SERVED_QUALITY),
                                            page.page_height, keyed(None))
                    found, cpu, wall, spent = await trace(db, mark, _png(unserved))
                    misses[kind].append((cpu, wall, found is not None))
                    print(f"  a miss ({kind}), {page.name}: worker {cpu:.2f} s ({spent}), "
                          f"trace {wall:.2f} s", flush=True)
        await db.close()
    print(f"\n{args.views} views over {len(pages)} corpus pages and {OTHER_FILES} files of "
          f"{OTHER_PAGES} pages; traces: {named}/{len(costs)} named, {wrong} wrong; worker "
          f"p50 {statistics.median(costs):.2f} s, p95 {_quantile(costs, 0.95):.2f} s, max "
          f"{max(costs):.2f} s; whole trace p50 {statistics.median(walls):.2f} s, max "
          f"{max(walls):.2f} s")
    for kind, results in misses.items():
        cpus = [cpu for cpu, _, _ in results]
        print(f"misses ({kind}): {len(results)}, named {sum(n for _, _, n in results)}; worker "
              f"p50 {statistics.median(cpus):.2f} s, p95 {_quantile(cpus, 0.95):.2f} s; whole "
              f"trace max {max(wall for _, wall, _ in results):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--views", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--ages", default="365,182,0",
                        help="the views leaked, per corpus page: those nearest these days ago")
    parser.add_argument("--misses", type=int, default=1,
                        help="leaks of no view, per corpus page and per page never served")
    parser.add_argument("--seed", type=int, default=50)
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "vaultd-leakmark-year"),
                        help="the seeded database's directory, kept for the next run")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

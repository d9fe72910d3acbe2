"""Naming a page view from the placement mark (docs/leak-tracing.md, "The placement mark" and
"A year of views").

A worker measures how far the leak's pattern words sit off their places and makes the print of
the page it shows (`read_leak`, untrusted: both parsed by fixed rules, `Evidence.from_bytes`,
`page_print.parsed`). The offsets are scored against the fields of candidate page views, and
against fields no view has: the spread of those is what a wrong view scores, and a view is
named only when its score stands THRESHOLD of those spreads above their mean (higher when
more views are scored, `candidates.threshold`). The candidates, in order until one is named:

1. the views of the pages whose prints match the leak's (`page_prints.pages_shown`) on the
   days the leak's pattern may print (`days.best_days`, read by the worker with the evidence);
2. those pages' views of the last year, newest first, a chunk at a time, YEAR_CAP of them at
   most (YEAR_CAP_DATED when a date was read: a guard against a date misread);
3. the account's newest views (`candidates.newest_views`), those not scored already: a page
   served before the prints, or a leak whose print is off (a crop).

A leak of a page the account did not serve, or of no page, scores like the references. The
scoring runs in a worker of the account (`score_placement`), given the candidates' seeds: its
arrays are made where NumPy's already are, not in the server (docs/performance-records.md, *The
server's memory*); its answer is parsed like the evidence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

from render.forensic_wire.evidence import EVIDENCE_BYTES, MIN_WINDOWS, BadEvidence, Evidence
from render.forensic_wire.page_print import PRINT_BYTES, BadPrint, parsed
from render.pool.render_pool import RenderPool
from render.worker.entry_points import read_leak, score_placement
from vaultd.db import Db
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.services.tracing import candidates, days
from vaultd.services.tracing.page_prints import pages_shown
from vaultd.timefmt import PARIS, utcnow

# The views of the leak's pages a trace scores at most: about 0.25 s of a worker's CPU (4-6 us a
# view, docs/leak-tracing.md "A year of views"), so that with the reading (0.2-0.3 s) and the
# newest views a miss stays near 0.5 s; what bounds it is the database, which reads the
# page's year at 165-250 us a view (8-12 s of a trace's wall time at the cap). A page viewed
# more often than this in a year is searched back as far as these views reach.
YEAR_CAP = 50_000
# The same when the leak's date was read and its days' views scored first: the year's views
# are then only a guard against a date misread, and a miss of a page viewed all year costs
# the worker about 0.1 s of them, not 0.25 s (docs/leak-tracing.md, "A year of views").
YEAR_CAP_DATED = 20_000
# In the references' spreads. Measured (bench.leakmark --family wash): a page washed of the
# invisible mark and of its words' offsets as far as 35 dB scores 8.5 or more; wrong views
# scored 4.2 at most over 112,000 (a normal tail: one in 50 million above 5.5).
THRESHOLD = 5.5
Floats = npt.NDArray[np.float64]
log = logging.getLogger("vaultd.trace")


@dataclass(frozen=True)
class Leak:
    """What a worker read off a leak for the placement mark."""

    evidence: Evidence
    page_print: bytes | None  # the page it shows (`render.forensic_wire.page_print`)
    days: tuple[str, ...] = ()  # the dates its pattern may print, likeliest first
    zone: ZoneInfo = PARIS  # the watermark's zone, which the dates are in


async def placement_match(db: Db, pool: RenderPool, mark: MarkCipher, account_id: str,
                          data: bytes, long_side: int, zone: ZoneInfo = PARIS) -> int | None:
    """The render id of the account's page view whose placement field the image shows, or
    None. The image is read in a worker of that account only; `long_side`: the deployment's
    `render.long_side`; `zone`: its `watermark.timezone`."""
    leak = await read_evidence(pool, mark, data, long_side, account_id, zone)
    if leak is None:
        return None
    return await match_in_account(db, pool, mark, account_id, leak, worker_of=account_id)


async def read_evidence(pool: RenderPool, mark: MarkCipher, data: bytes, long_side: int,
                        account_id: str | None, zone: ZoneInfo = PARIS) -> Leak | None:
    """How far the image's pattern words sit off their places, the days its pattern may print
    and the print of the page it shows, read in a worker (of `account_id`'s turn, or of none
    for the operator's tool); None when the image shows too little pattern to say."""
    dates = days.year_dates(utcnow(), zone)
    raw = await run_task(pool, read_leak, data, long_side, mark.page_print_key, dates,
                         account=account_id)
    if raw is None:
        return None
    try:  # the evidence's table, then the dates' scores and the page's print when it has one
        evidence = Evidence.from_bytes(raw[:EVIDENCE_BYTES])
    except BadEvidence as exc:  # a worker sent what no reading makes: it names no view
        log.warning("placement evidence refused: %s", exc)
        return None
    scored, rest = parse_days(raw[EVIDENCE_BYTES:], len(dates))
    try:
        shown = parsed(rest or None)
    except BadPrint as exc:  # the evidence stands; the newest views are its candidates
        log.warning("page print refused: %s", exc)
        shown = None
    if evidence.windows < MIN_WINDOWS:
        return None
    return Leak(evidence, shown, tuple(days.best_days(scored, dates)), zone)


def parse_days(raw: bytes, count: int) -> tuple[list[float], bytes]:
    """The `count` dates' scores at the head of `raw` and what follows them; no scores (and
    no print) when `raw` is neither the scores nor the scores and a print."""
    if len(raw) not in (4 * count, 4 * count + PRINT_BYTES):
        log.warning("placement dates refused: not %d float32s", count)
        return [], b""
    return np.frombuffer(raw[: 4 * count], dtype="<f4").astype(float).tolist(), raw[4 * count:]


async def match_in_account(db: Db, pool: RenderPool, mark: MarkCipher, account_id: str,
                           leak: Leak, *, worker_of: str | None) -> int | None:
    """The render id of the account's candidate view the evidence names, or None; scored in a
    worker of `worker_of`'s turn (the account itself, or None for the operator's tool)."""
    scoring = _Scoring(pool, mark, leak.evidence.to_bytes(), worker_of)
    shown = [] if leak.page_print is None else await pages_shown(db, account_id,
                                                                 leak.page_print)
    for file_id, page in shown:
        for day in leak.days:
            window = days.day_window(day, leak.zone)
            async for chunk in candidates.page_views(db, account_id, file_id, page,
                                                     window=window):
                found = await scoring.score(chunk)
                if found is not None:
                    return found
    limit = scoring.count + (min(YEAR_CAP_DATED, YEAR_CAP) if leak.days else YEAR_CAP)
    for file_id, page in shown:
        async for chunk in candidates.page_views(db, account_id, file_id, page):
            found = await scoring.score(chunk[: max(0, limit - scoring.count)])
            if found is not None:
                return found
            if scoring.count >= limit:
                break
        if scoring.count >= limit:
            break
    return await scoring.score(await candidates.newest_views(db, account_id))


class _Scoring:
    """The candidates scored so far in one account, a chunk per worker task."""

    def __init__(self, pool: RenderPool, mark: MarkCipher, evidence: bytes,
                 worker_of: str | None) -> None:
        self.pool, self.mark, self.evidence, self.worker_of = pool, mark, evidence, worker_of
        self.scored: set[int] = set()

    @property
    def count(self) -> int:
        return len(self.scored)

    async def score(self, render_ids: list[int]) -> int | None:
        """The view of `render_ids` (those not scored before) the evidence names, or None."""
        fresh = [render_id for render_id in render_ids if render_id not in self.scored]
        if not fresh:
            return None
        self.scored.update(fresh)
        seeds = [self.mark.placement_seed(render_id) for render_id in fresh]
        raw = await run_task(self.pool, score_placement, self.evidence, seeds,
                             account=self.worker_of)
        standing = parse_standings(raw, len(fresh))
        if standing is None:
            return None
        return named_view(standing, fresh, candidates.threshold(self.count, THRESHOLD))


def parse_standings(raw: object, count: int) -> Floats | None:
    """A worker's standings: `count` finite float64s, or None (a worker that lies names no view)."""
    if not isinstance(raw, bytes) or len(raw) != 8 * count:
        log.warning("placement standings refused: not %d float64s", count)
        return None
    standing: Floats = np.frombuffer(raw, dtype="<f8").astype(np.float64)
    if not np.isfinite(standing).all():
        log.warning("placement standings refused: not finite")
        return None
    return standing


def named_view(standing: Floats, render_ids: list[int], threshold: float = THRESHOLD
               ) -> int | None:
    """The candidate scoring `threshold` above the references, the highest if several (the
    benchmarks and tests score in their own process, `render.forensic.placement.standings`,
    and judge here)."""
    if len(standing) == 0 or standing.max() < threshold:
        return None
    return render_ids[int(standing.argmax())]


"""Naming a page view from the placement mark (docs/leak-tracing.md, "The placement mark").

A worker measures how far the leak's pattern words sit off their places (`read_placement`,
untrusted: parsed by fixed rules, `Evidence.from_bytes`). Those offsets are scored against the
field of each of the account's CANDIDATES newest page views (a bounded read of its log,
`services.common.newest`), and against fields no view has: the spread of those is what a wrong
view scores, and a view is named only when its score stands THRESHOLD of those spreads above
their mean. A leak of a page the account did not serve, or of no page, scores like the
references. The scoring runs in a worker of the account (`score_placement`), given the
candidates' seeds: its arrays are made where NumPy's already are, not in the server
(docs/performance.md, *The server's memory*); its answer is parsed like the evidence.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from render.forensic_wire.evidence import MIN_WINDOWS, BadEvidence, Evidence
from render.pool.render_pool import RenderPool
from render.worker.entry_points import read_placement, score_placement
from vaultd.db import Db
from vaultd.services.common.batches import EPOCH
from vaultd.services.common.newest import newest
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.timefmt import utcnow

CANDIDATES = 5000  # the account's newest page views a placement trace can name
# In the references' spreads. Measured (bench.leakmark --family wash): a page washed of the
# invisible mark and of its words' offsets as far as 35 dB scores 8.5 or more; wrong views
# scored 4.2 at most over 112,000 (a normal tail: one in 50 million above 5.5).
THRESHOLD = 5.5
Floats = npt.NDArray[np.float64]
log = logging.getLogger("vaultd.trace")


async def placement_match(db: Db, pool: RenderPool, mark: MarkCipher, account_id: str,
                          data: bytes, long_side: int) -> int | None:
    """The render id of the account's page view whose placement field the image shows, or
    None. The image is read in a worker of that account only; `long_side`: the deployment's
    `render.long_side`."""
    evidence = await read_evidence(pool, data, long_side, account_id)
    if evidence is None:
        return None
    return await match_in_account(db, pool, mark, account_id, evidence, worker_of=account_id)


async def read_evidence(pool: RenderPool, data: bytes, long_side: int,
                        account_id: str | None) -> Evidence | None:
    """How far the image's pattern words sit off their places, read in a worker (of
    `account_id`'s turn, or of none for the operator's tool); None when the image shows too
    little pattern to say."""
    raw = await run_task(pool, read_placement, data, long_side, account=account_id)
    if raw is None:
        return None
    try:
        evidence = Evidence.from_bytes(raw)
    except BadEvidence as exc:  # a worker sent what no reading makes: it names no view
        log.warning("placement evidence refused: %s", exc)
        return None
    return evidence if evidence.windows >= MIN_WINDOWS else None


async def match_in_account(db: Db, pool: RenderPool, mark: MarkCipher, account_id: str,
                           evidence: Evidence, *, worker_of: str | None) -> int | None:
    """The render id of the account's candidate view the evidence names, or None; scored in a
    worker of `worker_of`'s turn (the account itself, or None for the operator's tool)."""
    render_ids = await recent_render_ids(db, account_id)
    if not render_ids:
        return None
    seeds = [mark.placement_seed(render_id) for render_id in render_ids]
    raw = await run_task(pool, score_placement, evidence.to_bytes(), seeds, account=worker_of)
    standing = parse_standings(raw, len(render_ids))
    return None if standing is None else named_view(standing, render_ids)


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


def named_view(standing: Floats, render_ids: list[int]) -> int | None:
    """The candidate scoring THRESHOLD above the references, the highest if several (the
    benchmarks and tests score in their own process, `render.forensic.placement.standings`,
    and judge here)."""
    if len(standing) == 0 or standing.max() < THRESHOLD:
        return None
    return render_ids[int(standing.argmax())]


async def recent_render_ids(db: Db, account_id: str) -> list[int]:
    """The render ids of the account's CANDIDATES newest page views, newest first."""
    page = await newest(db.access_log, {"accountId": account_id, "action": "page"}, "at",
                        count=CANDIDATES, oldest=EPOCH, latest=utcnow(), fields=("renderId",))
    return [int(entry["renderId"], 16) for entry in page.docs if "renderId" in entry]


"""Naming a page view from the placement mark (docs/leak-tracing.md, "The placement mark").

A worker measures how far the leak's pattern words sit off their places (`read_placement`,
untrusted: parsed by fixed rules, `Evidence.from_bytes`). Here those offsets are scored against
the field of each of the account's CANDIDATES newest page views (a bounded read of its log,
`services.common.newest`), and against REFERENCES fields no view has: the spread of those is
what a wrong view scores, and a view is named only when its score stands THRESHOLD of those
spreads above their mean. A leak of a page the account did not serve, or of no page, scores
like the references.
"""

from __future__ import annotations

import asyncio
import functools
import logging

import numpy as np
import numpy.typing as npt

from render.forensic.placement import BadEvidence, Evidence, fields, scores
from render.forensic.placement_read import MIN_WINDOWS
from render.pool.render_pool import RenderPool
from render.worker.entry_points import read_placement
from vaultd.db import Db
from vaultd.services.common.batches import EPOCH
from vaultd.services.common.newest import newest
from vaultd.services.common.pool_calls import run_task
from vaultd.services.pages.mark_key import MarkCipher
from vaultd.timefmt import utcnow

CANDIDATES = 5000  # the account's newest page views a placement trace can name
REFERENCES = 200
# In the references' spreads. Measured (bench.leakmark --family wash): a page washed of the
# invisible mark and of its words' offsets as far as 35 dB scores 8.5 or more; wrong views
# scored 4.2 at most over 112,000 (a normal tail: one in 50 million above 5.5).
THRESHOLD = 5.5
_CHUNK = 500  # fields scored at once: about 20 MB of temporaries
Floats = npt.NDArray[np.float64]
log = logging.getLogger("vaultd.trace")


async def placement_match(db: Db, pool: RenderPool, mark: MarkCipher, account_id: str,
                          data: bytes, long_side: int) -> int | None:
    """The render id of the account's page view whose placement field the image shows, or
    None. The image is read in a worker of that account only; `long_side`: the deployment's
    `render.long_side`."""
    evidence = await read_evidence(pool, data, long_side, account_id)
    return None if evidence is None else await match_in_account(db, mark, account_id, evidence)


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


async def match_in_account(db: Db, mark: MarkCipher, account_id: str,
                           evidence: Evidence) -> int | None:
    """The render id of the account's candidate view the evidence names, or None."""
    render_ids = await recent_render_ids(db, account_id)
    if not render_ids:
        return None
    return await asyncio.to_thread(best_view, evidence, render_ids, mark)


async def recent_render_ids(db: Db, account_id: str) -> list[int]:
    """The render ids of the account's CANDIDATES newest page views, newest first."""
    page = await newest(db.access_log, {"accountId": account_id, "action": "page"}, "at",
                        count=CANDIDATES, oldest=EPOCH, latest=utcnow(), fields=("renderId",))
    return [int(entry["renderId"], 16) for entry in page.docs if "renderId" in entry]


def best_view(evidence: Evidence, render_ids: list[int], mark: MarkCipher) -> int | None:
    """The candidate scoring THRESHOLD above the references, the highest if several."""
    standing = standings(evidence, render_ids, mark)
    if len(standing) == 0 or standing.max() < THRESHOLD:
        return None
    return render_ids[int(standing.argmax())]


def standings(evidence: Evidence, render_ids: list[int], mark: MarkCipher) -> Floats:
    """Each candidate's score, in the references' spreads above their mean."""
    reference = scores(evidence, _reference_fields())
    mean, spread = float(reference.mean()), float(reference.std())
    found = np.zeros(len(render_ids))
    if spread == 0:
        return found
    rows = max(evidence.rows, 1)  # only the rows the leak shows are drawn
    for start in range(0, len(render_ids), _CHUNK):
        chunk = render_ids[start: start + _CHUNK]
        drawn = fields([mark.placement_seed(render_id) for render_id in chunk], rows)
        found[start: start + len(chunk)] = (scores(evidence, drawn) - mean) / spread
    return found


@functools.cache
def _reference_fields() -> npt.NDArray[np.int8]:
    """Fields no page view has (seeds no key gives): the same for every trace, so a verdict
    does not depend on a draw."""
    return fields([b"reference" + index.to_bytes(7, "big") for index in range(REFERENCES)])

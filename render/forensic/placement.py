"""The placement mark: every word of the visible pattern up to a pixel off its place, by a
keyed field per page view (docs/leak-tracing.md, "The placement mark").

The invisible mark is a small offset on paper and letters that are flat without it, so a washer
with the code levels it off (docs/leak-tracing.md, "Washing the mark off"). Where each word of
the pattern sits is not in the code: the field below moves it by -1, 0 or +1 px each way, the
same for every word whose centre falls in one square cell of the page (COLUMNS across, so a
rescaled page keeps them). Putting the words back where the code would put them moves their
edges as much as the field did.

What crosses between processes:
- the page view's `seed` (16 bytes, `vaultd.services.pages.mark_key`), which a worker turns into
  the field it places the words by (`field`);
- a trace's `Evidence` (`render.forensic_wire.evidence`, with the cells and the seed's size,
  which the server shares): the offsets a worker measured on a leak (`placement_read`), summed
  per cell, as bytes the service parses by fixed rules (`Evidence.from_bytes`); they are scored
  against the fields of the account's page views (`scores`). A worker that lies can only
  fail to name a view: it cannot draw another view's field without that view's seed.
- the candidates' seeds, sent back to the worker that read the evidence so that it scores them
  (`standings`, run by `render.forensic.trace_task.score_placement`): the fields and their
  temporaries (about 20 MB a chunk) are made where NumPy's arrays already are, not in the
  server. Its standings are parsed by the service like any worker's answer.
"""

from __future__ import annotations

import functools
import hashlib
import math

import numpy as np
import numpy.typing as npt

from render.forensic_wire.evidence import COLUMNS, ROWS, Evidence

Field = npt.NDArray[np.int8]  # (ROWS, COLUMNS, 2): each cell's (dx, dy) in {-1, 0, 1}
Floats = npt.NDArray[np.float64]


def field(seed: bytes) -> Field:
    """The page view's offsets, one per cell (`fields`)."""
    drawn: Field = fields([seed])[0]
    return drawn


def fields(seeds: list[bytes], rows: int = ROWS) -> npt.NDArray[np.int8]:
    """Each seed's field, its first `rows` rows, (seeds, rows, COLUMNS, 2): SHAKE-128 of the
    seed, each byte taken mod 3 (-1 a 256th likelier than 0 or 1: the scores take each axis's
    mean off). A standard function, so the same field whatever numpy a deployment later runs
    (numpy does not promise its generators' streams across versions); and an extendable
    output, so a field's first rows are the same bytes however many are drawn (a trace draws
    only the rows its leak shows, for 5,000 candidates)."""
    size = rows * COLUMNS * 2
    stream = b"".join(hashlib.shake_128(seed).digest(size) for seed in seeds)
    drawn = (np.frombuffer(stream, dtype=np.uint8) % 3).astype(np.int8) - 1
    return drawn.reshape(len(seeds), rows, COLUMNS, 2)


def cells(xs: Floats, ys: Floats, width: float) -> npt.NDArray[np.intp]:
    """The flat index (row x COLUMNS + column) of the cell under each point of a page `width`
    px wide; points off the page count in its nearest cell."""
    side = width / COLUMNS
    rows = np.clip(np.floor(ys / side), 0, ROWS - 1).astype(np.intp)
    columns = np.clip(np.floor(xs / side), 0, COLUMNS - 1).astype(np.intp)
    flat: npt.NDArray[np.intp] = rows * COLUMNS + columns
    return flat


def scores(evidence: Evidence, drawn: npt.NDArray[np.int8]) -> Floats:
    """Each field's (N, rows, COLUMNS, 2; at least `evidence.rows` rows) correlation with the
    measured offsets, each axis's mean taken off, times the square root of the values
    correlated (as a z-score; windows overlap, so compare it with other fields' scores, not
    with a normal table)."""
    n = evidence.windows
    if n < 4:
        return np.zeros(len(drawn))
    used = drawn.shape[1] * COLUMNS  # cells past the field's rows hold no window
    # Each axis's plane as float32 rows: matrix-vector products over every field at once.
    planes = np.ascontiguousarray(np.moveaxis(drawn.reshape(len(drawn), used, 2), 2, 0),
                                  dtype=np.float32)
    counts = evidence.counts[:used].astype(np.float32)
    covariance = np.zeros(len(drawn))
    field_spread = np.zeros(len(drawn))
    measured_spread = 0.0
    for axis in (0, 1):
        e = planes[axis]
        sum_m = float(evidence.sums[:, axis].sum())
        sum_e = (e @ counts).astype(np.float64)
        cross = (e @ evidence.sums[:used, axis].astype(np.float32)).astype(np.float64)
        covariance += cross - sum_m * sum_e / n
        field_spread += (np.abs(e) @ counts).astype(np.float64) - sum_e ** 2 / n  # e*e = |e|
        measured_spread += float(evidence.squares[:, axis].sum()) - sum_m ** 2 / n
    denominator = np.sqrt(np.maximum(field_spread, 0.0) * max(measured_spread, 0.0))
    safe = np.where(denominator > 0, denominator, 1.0)
    found: Floats = np.where(denominator > 0, covariance / safe, 0.0) * math.sqrt(2 * n)
    return found


REFERENCES = 200  # fields no page view has: what a wrong view scores is their spread
_CHUNK = 500  # fields scored at once: about 20 MB of temporaries


def standings(evidence: Evidence, seeds: list[bytes]) -> Floats:
    """Each seed's field's score, in the references' spreads above their mean."""
    reference = scores(evidence, _reference_fields())
    mean, spread = float(reference.mean()), float(reference.std())
    found = np.zeros(len(seeds))
    if spread == 0:
        return found
    rows = max(evidence.rows, 1)  # only the rows the leak shows are drawn
    for start in range(0, len(seeds), _CHUNK):
        chunk = seeds[start: start + _CHUNK]
        found[start: start + len(chunk)] = (scores(evidence, fields(chunk, rows)) - mean) / spread
    return found


@functools.cache
def _reference_fields() -> npt.NDArray[np.int8]:
    """Fields no page view has (seeds no key gives): the same for every trace, so a verdict
    does not depend on a draw."""
    return fields([b"reference" + index.to_bytes(7, "big") for index in range(REFERENCES)])

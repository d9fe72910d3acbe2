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
  against the fields of the account's page views (`standings`). A worker that lies can only
  fail to name a view: it cannot draw another view's field without that view's seed.
- the candidates' seeds, sent back to the worker that read the evidence so that it scores them
  (`screened`, run by `render.forensic.trace_task.score_placement`): the fields and their
  temporaries (a few MB a task) are made where NumPy's arrays already are, not in the
  server. Its standings are parsed by the service like any worker's answer.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

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
    output, so a field's first bytes are the same however many are drawn (a trace draws only
    those up to the last cell its leak measured, `standings`)."""
    drawn = (_streams(seeds, rows * COLUMNS * 2) % 3).astype(np.int8) - 1
    return drawn.reshape(len(seeds), rows, COLUMNS, 2)


def cells(xs: Floats, ys: Floats, width: float) -> npt.NDArray[np.intp]:
    """The flat index (row x COLUMNS + column) of the cell under each point of a page `width`
    px wide; points off the page count in its nearest cell."""
    side = width / COLUMNS
    rows = np.clip(np.floor(ys / side), 0, ROWS - 1).astype(np.intp)
    columns = np.clip(np.floor(xs / side), 0, COLUMNS - 1).astype(np.intp)
    flat: npt.NDArray[np.intp] = rows * COLUMNS + columns
    return flat


REFERENCES = 200  # fields no page view has: what a wrong view scores is their spread
# Fields scored at once, into buffers made once per call: fresh temporaries of a few MB a
# chunk cost more in the kernel's page faults than the arithmetic (4 faults a field, twice
# the scores' CPU, measured), and these stay in the caches.
_CHUNK = 256
# OpenBLAS wakes a thread per core for a product this thin and lets it spin after: 10-30 times
# the product's own CPU (measured on 2 cores), so the products run on one thread.
_BLAS = ThreadpoolController()


@dataclass(frozen=True)
class _Weights:
    """One evidence as weights on the bytes of a field's stream (docs/leak-tracing.md, "A year
    of views": what a miss costs). A byte's offset is its residue r mod 3, less 1, and the
    offset's size |r - 1| is (r - 1)^2: every sum a score needs is a product of the residues,
    or of their squares, with a weight per byte, plus a constant of the weights."""

    positions: npt.NDArray[np.intp]  # (P,) bytes of a seed's stream in measured cells
    by_residue: npt.NDArray[np.float32]  # (P, 4): per axis the field's sum, its cross sum
    by_square: npt.NDArray[np.float32]  # (P, 2): per axis the sum of its squares
    constants: Floats  # (6,): what the -1 and the +1 above add to the six sums
    windows: int
    measured_sums: Floats  # (2,): the offsets measured, summed per axis
    measured_spread: float

    @classmethod
    def of(cls, evidence: Evidence) -> _Weights:
        """The bytes that can count (a cell without a window adds nothing to any sum: its sums
        are zero too, `Evidence.from_bytes`), and what each adds."""
        measured = np.nonzero(evidence.counts)[0]
        axes = np.tile(np.arange(2), len(measured))
        at = np.repeat(measured, 2)
        rows = np.arange(len(at))
        by_residue = np.zeros((len(at), 4))
        by_residue[rows, axes] = evidence.counts[at]
        by_residue[rows, 2 + axes] = evidence.sums[at, axes]
        by_square = by_residue[:, :2].copy()
        # sum(w (r - 1)) = r.w - sum(w); sum(w (r - 1)^2) = r^2.w - 2 r.w + sum(w).
        constants = np.concatenate([-by_residue.sum(axis=0), by_square.sum(axis=0)])
        n = evidence.windows
        sums = evidence.sums.sum(axis=0)
        spread = float((evidence.squares.sum(axis=0) - sums ** 2 / max(n, 1)).sum())
        return cls(at * 2 + axes, by_residue.astype(np.float32), by_square.astype(np.float32),
                   constants, n, sums, spread)

    @property
    def length(self) -> int:
        """The bytes of each seed's stream the scores read (up to the last measured cell's)."""
        return int(self.positions[-1]) + 1 if len(self.positions) else 0

    def scores(self, streams: npt.NDArray[np.uint8], scratch: _Scratch) -> Floats:
        """Each stream's field (N <= the scratch's, at least `length` bytes) correlated with
        the measured offsets, each axis's mean taken off, times the square root of the values
        correlated (as a z-score; windows overlap, so compare it with other fields' scores,
        not with a normal table)."""
        n = self.windows
        if n < 4:
            return np.zeros(len(streams))
        residues, squares = scratch.residues(streams, self.positions)
        with _BLAS.limit(limits=1, user_api="blas"):
            linear = (residues @ self.by_residue).astype(np.float64)
            quadratic = (squares @ self.by_square).astype(np.float64)
        field_sums = linear[:, 0:2] + self.constants[0:2]
        cross = linear[:, 2:4] + self.constants[2:4]
        sizes = quadratic - 2 * linear[:, 0:2] + self.constants[4:6]
        covariance = (cross - self.measured_sums * field_sums / n).sum(axis=1)
        field_spread = (sizes - field_sums ** 2 / n).sum(axis=1)
        denominator = np.sqrt(np.maximum(field_spread, 0.0) * max(self.measured_spread, 0.0))
        safe = np.where(denominator > 0, denominator, 1.0)
        found: Floats = np.where(denominator > 0, covariance / safe, 0.0) * math.sqrt(2 * n)
        return found


class _Scratch:
    """The buffers a chunk of fields is scored in, made once per `standings`."""

    def __init__(self, fields: int, positions: int) -> None:
        self.measured = np.empty((fields, positions), dtype=np.uint8)
        self.wide = np.empty((fields, positions), dtype=np.uint16)
        self.quotient = np.empty((fields, positions), dtype=np.uint16)
        self.floats = np.empty((2, fields, positions), dtype=np.float32)

    def residues(self, streams: npt.NDArray[np.uint8], positions: npt.NDArray[np.intp],
                 ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """The bytes at `positions` of each stream mod 3, and their squares, as float32:
        b - 3 floor(b / 3), the quotient as (b * 171) >> 9 (exact for every byte), in 16-bit
        integers (numpy's division of bytes, or a table lookup by them, costs twice as much)."""
        count = len(streams)
        measured, wide, quotient = (self.measured[:count], self.wide[:count],
                                    self.quotient[:count])
        residues, squares = self.floats[0, :count], self.floats[1, :count]
        np.take(streams, positions, axis=1, out=measured)
        np.copyto(wide, measured)
        np.multiply(wide, 171, out=quotient)
        np.right_shift(quotient, 9, out=quotient)
        np.multiply(quotient, 3, out=quotient)
        np.subtract(wide, quotient, out=wide)
        np.copyto(residues, wide)
        np.multiply(residues, residues, out=squares)
        return residues, squares


def standings(evidence: Evidence, seeds: list[bytes]) -> Floats:
    """Each seed's field's score, in the references' spreads above their mean (zeros when
    the references do not spread). Only the bytes of each seed's stream up to the last cell
    the leak measured are drawn, and only the measured cells' are looked at."""
    found = _standings(evidence, seeds)
    return np.zeros(len(seeds)) if found is None else found


def _standings(evidence: Evidence, seeds: list[bytes]) -> Floats | None:
    weights = _Weights.of(evidence)
    scratch = _Scratch(max(_CHUNK, REFERENCES), len(weights.positions))
    reference = weights.scores(_reference_streams()[:, :weights.length], scratch)
    mean, spread = float(reference.mean()), float(reference.std())
    if spread == 0:
        return None
    found = np.zeros(len(seeds))
    for start in range(0, len(seeds), _CHUNK):
        chunk = seeds[start: start + _CHUNK]
        found[start: start + len(chunk)] = weights.scores(_streams(chunk, weights.length),
                                                          scratch)
    return (found - mean) / spread


def _streams(seeds: list[bytes], length: int) -> npt.NDArray[np.uint8]:
    """Each seed's first `length` bytes of SHAKE-128, the bytes `fields` draws offsets from
    (SHAKE's output is the same prefix however much is drawn), (seeds, length)."""
    drawn = b"".join([hashlib.shake_128(seed).digest(length) for seed in seeds])
    return np.frombuffer(drawn, dtype=np.uint8).reshape(len(seeds), length)


# A screen before the whole evidence (`screened`): the cells holding the first FIRST_SHARE of
# the leak's windows, from the top of the page, and a standing of FIRST_BAR on them to go on.
FIRST_SHARE = 0.5
FIRST_BAR = 1.0


def screened(evidence: Evidence, seeds: list[bytes]) -> Floats:
    """Each seed's standing where it could name a view (what a trace's worker answers): every
    field scored first on the top of the page only, the cells holding FIRST_SHARE of the
    windows (about half its stream's bytes), and only those standing FIRST_BAR or more there
    scored on the whole evidence; the others keep their first standing, under FIRST_BAR and so
    under any threshold. It names no view `standings` would not: a view's whole standing is
    the same either way (docs/leak-tracing.md, "A year of views": the screen)."""
    top = _top(evidence, FIRST_SHARE)
    first = None if top.windows == evidence.windows else _standings(top, seeds)
    if first is None:  # the top holds every window, or says nothing: one pass
        return standings(evidence, seeds)
    found = first.copy()
    passed = np.nonzero(first >= FIRST_BAR)[0]
    if len(passed):
        found[passed] = standings(evidence, [seeds[index] for index in passed])
    return found


def _top(evidence: Evidence, share: float) -> Evidence:
    """The evidence of the first cells (row by row from the top) holding `share` of its
    windows, the later cells' emptied."""
    held = np.cumsum(evidence.counts)
    cut = int(np.searchsorted(held, share * held[-1])) + 1
    kept = (np.arange(len(evidence.counts)) < cut).astype(np.float64)
    return Evidence(evidence.counts * kept, evidence.sums * kept[:, None],
                    evidence.squares * kept[:, None])


@functools.cache
def _reference_streams() -> npt.NDArray[np.uint8]:
    """The streams of fields no page view has (seeds no key gives), whole: the same for every
    trace, so a verdict does not depend on a draw."""
    seeds = [b"reference" + index.to_bytes(7, "big") for index in range(REFERENCES)]
    return _streams(seeds, ROWS * COLUMNS * 2)

"""The placement mark's evidence (docs/leak-tracing.md, "The placement mark"): the offsets a
worker measured on a leak, summed per cell of the page, and the format they cross the process
boundary in. A worker writes it (`render.forensic.placement_read`); the server parses it by
fixed rules (`Evidence.from_bytes`: it is untrusted) and sends it back to a worker for scoring
(`render.forensic.placement.standings`). The cells and the seed's size are here because both
sides agree on them; the field drawn from a seed stays with the drawing (`render.forensic`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

COLUMNS = 26  # cells across the page (48 px each on a served page 1,237 px wide)
ROWS = 104  # cells down, at most: a page four times as long as wide; longer ones share the last
CELLS = ROWS * COLUMNS
SEED_BYTES = 16
_FIELDS = 5  # per cell: windows measured, their dx and dy summed, and the squares of both
_MAX_WINDOWS_PER_CELL = 1 << 16  # far above a cell's windows at any size a leak is read
MIN_WINDOWS = 200  # fewer windows measured: too little pattern to name a view
EVIDENCE_BYTES = CELLS * _FIELDS * 8  # `Evidence.to_bytes`'s table: little-endian float64s

Floats = npt.NDArray[np.float64]


class BadEvidence(ValueError):
    """A worker's evidence that is not what `Evidence.to_bytes` writes."""


@dataclass(frozen=True)
class Evidence:
    """The offsets measured on a leak, per cell: how many windows, their sums and sums of
    squares (dx, then dy). Enough to correlate them with any field
    (`render.forensic.placement.scores`)."""

    counts: Floats  # (CELLS,)
    sums: Floats  # (CELLS, 2)
    squares: Floats  # (CELLS, 2)

    @classmethod
    def of(cls, offsets: Floats, at_cells: npt.NDArray[np.intp]) -> Evidence:
        """Offsets (windows, 2) measured in the cells `at_cells` (windows,)."""
        counts = np.bincount(at_cells, minlength=CELLS).astype(np.float64)
        sums = np.stack([np.bincount(at_cells, offsets[:, axis], CELLS) for axis in (0, 1)], 1)
        squares = np.stack([np.bincount(at_cells, offsets[:, axis] ** 2, CELLS)
                            for axis in (0, 1)], 1)
        return cls(counts, sums.astype(np.float64), squares.astype(np.float64))

    @property
    def windows(self) -> int:
        return int(self.counts.sum())

    @property
    def rows(self) -> int:
        """The field's rows the evidence reaches (1 + the last with a window in it)."""
        measured = np.nonzero(self.counts)[0]
        return 0 if len(measured) == 0 else int(measured[-1]) // COLUMNS + 1

    def to_bytes(self) -> bytes:
        table = np.concatenate([self.counts[:, None], self.sums, self.squares], axis=1)
        return table.astype("<f8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> Evidence:
        """Parsed and checked: a table of the exact size, finite, each cell's values within
        what its count of windows can hold (offsets are at most a few px)."""
        if len(data) != EVIDENCE_BYTES:
            raise BadEvidence("placement evidence of the wrong size")
        table = np.frombuffer(data, dtype="<f8").reshape(CELLS, _FIELDS).astype(np.float64)
        counts, sums, squares = table[:, 0], table[:, 1:3], table[:, 3:5]
        reach = 4.0  # px: no window is read further off
        if not np.isfinite(table).all() or (counts < 0).any() \
                or (counts != np.round(counts)).any() or (counts > _MAX_WINDOWS_PER_CELL).any() \
                or (np.abs(sums) > reach * counts[:, None]).any() or (squares < 0).any() \
                or (squares > reach ** 2 * counts[:, None]).any():
            raise BadEvidence("placement evidence out of bounds")
        return cls(counts, sums, squares)
